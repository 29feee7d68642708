"""The run viewer: one self-contained HTML page per run folder (`aiscientist show`)."""

from __future__ import annotations

from pathlib import Path

from aiscientist.paths import write_atomic
from aiscientist.viewer.load import RunView, load_run, run_root
from aiscientist.viewer.render import render

PAGE = "run.html"


def write_page(folder: Path | str) -> Path:
    """Render the run in `folder` (a run folder, or a bench cell's round folder) into
    `<run>/run.html` and return its path."""
    run = load_run(folder)
    path = run.root / PAGE
    write_atomic(path, render(run))
    return path


__all__ = ["PAGE", "RunView", "load_run", "run_root", "write_page"]
