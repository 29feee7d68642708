"""A `solve` run replayed from its recording repeats its decisions exactly."""

from __future__ import annotations

import json
from pathlib import Path

from tests.orchestrator.test_orchestrator_solve import TINY, _cli


def _trajectory(run_dir: Path) -> list[tuple]:
    steps = [json.loads(p.read_text()) for p in sorted((run_dir / "experiments").glob("step_*/step.json"))]
    return [(s["hypothesis"], s["metric"], (run_dir / s["diff_path"]).read_text()) for s in steps]


def test_replayed_solve_repeats_every_decision(tmp_path: Path) -> None:
    record, first, second = tmp_path / "rec", tmp_path / "first", tmp_path / "second"
    done = _cli(
        "--record",
        str(record),
        "solve",
        str(TINY),
        "--model",
        "offline",
        "--steps",
        "3",
        "--run-dir",
        str(first),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    replayed = _cli(
        "--replay",
        str(record),
        "solve",
        str(TINY),
        "--model",
        "offline",
        "--steps",
        "3",
        "--run-dir",
        str(second),
        cwd=tmp_path,
    )
    assert replayed.returncode == 0, replayed.stderr
    assert _trajectory(first) == _trajectory(second) and len(_trajectory(first)) == 3
    changed = _cli(
        "--replay",
        str(record),
        "solve",
        str(TINY),
        "--model",
        "offline",
        "--steps",
        "4",
        "--run-dir",
        str(tmp_path / "third"),
        cwd=tmp_path,
    )
    assert changed.returncode == 1 and "replay miss" in changed.stderr
