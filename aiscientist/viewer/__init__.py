"""The run viewer: one self-contained HTML page per run folder (`aiscientist show`)."""

from __future__ import annotations

from pathlib import Path

from aiscientist.records.paths import RunPaths, write_atomic
from aiscientist.viewer.load import load_run
from aiscientist.viewer.render import render


def write_page(folder: Path | str) -> Path:
    """Write `<run>/run.html` for a run folder or a bench cell's round folder."""
    run = load_run(folder)
    path = RunPaths(run.root).page
    write_atomic(path, render(run))
    return path
