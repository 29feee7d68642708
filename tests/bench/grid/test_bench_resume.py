"""`bench run` killed mid-grid (SIGKILL of the whole process group) and run again
finishes only what was missing: finished runs are untouched, the interrupted run
keeps its steps and continues numbering, nothing is redone."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from aiscientist.records.cell import CellPaths, CellSummary

ROOT = Path(__file__).resolve().parents[3]
TASKS = f"{ROOT}/tests/fixtures/bench/tiny-r2/task.yaml"
ROUNDS = 3
STEPS = 4


def command(out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "aiscientist",
        "bench",
        "run",
        "--agents",
        "hpsearch",
        "--tasks",
        TASKS,
        "--rounds",
        str(ROUNDS),
        "--steps",
        str(STEPS),
        "--out",
        str(out),
        "--workers",
        "1",
        "--no-progress",
        "--no-report",
        "--embedder",
        "minilm",
    ]


def runs(out: Path) -> list[Path]:
    return sorted((out / "runs").glob("*/*/round_*"))


def steps(run: Path) -> list[Path]:
    return sorted(run.glob("ws/experiments/step_*/step.json"))


def test_killed_grid_resumes_only_what_is_missing(tmp_path: Path):
    out = tmp_path / "results"
    proc = subprocess.Popen(
        command(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            finished = [r for r in runs(out) if (r / "result.json").is_file()]
            partial = [r for r in runs(out) if not (r / "result.json").is_file() and 1 <= len(steps(r)) < STEPS]
            if finished and partial:
                break
            assert proc.poll() is None, "the grid finished before it could be interrupted"
            time.sleep(0.1)
        else:
            raise AssertionError("the grid never reached a finished run plus a half-done one")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    finished = {
        r: (
            (r / "result.json").read_bytes(),
            (r / "result.json").stat().st_mtime_ns,
            [p.stat().st_mtime_ns for p in steps(r)],
        )
        for r in runs(out)
        if (r / "result.json").is_file()
    }
    interrupted = {
        r: {p.parent.name: p.read_text() for p in steps(r)} for r in runs(out) if not (r / "result.json").is_file()
    }
    assert finished and any(0 < len(s) < STEPS for s in interrupted.values())

    done = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = int(re.search(r"(\d+) run now", done.stderr + done.stdout).group(1))
    assert ran == ROUNDS - len(finished)

    assert len(runs(out)) == ROUNDS
    for run, (result, mtime, step_mtimes) in finished.items():
        assert (run / "result.json").read_bytes() == result and (run / "result.json").stat().st_mtime_ns == mtime
        assert [p.stat().st_mtime_ns for p in steps(run)] == step_mtimes  # no step redone
    for run, before in interrupted.items():
        after = steps(run)
        assert [p.parent.name for p in after] == [f"step_{i:04d}" for i in range(1, STEPS + 1)]
        for name, text in before.items():  # steps done before the kill are kept as they were
            assert (run / "ws/experiments" / name / "step.json").read_text() == text
        summary = CellSummary.model_validate_json((run / "result.json").read_text())
        assert summary.result.steps_completed == STEPS and summary.assigned == STEPS


def test_wall_time_counts_a_killed_session_up_to_its_last_step(tmp_path: Path):
    from bench.grid.timing import Timing

    first = Timing(CellPaths(tmp_path))  # a session that gets killed: never closed
    step = tmp_path / "ws/experiments/step_0001/step.json"
    step.parent.mkdir(parents=True)
    step.write_text("{}")
    os.utime(step, (first.started + 100, first.started + 100))  # its last step ended 100 s in
    second = Timing(CellPaths(tmp_path))
    assert 100 <= second.wall < 101
    assert 100 <= second.close() < 101 + (time.time() - second.started)
    assert json.loads((tmp_path / "timing.json").read_text())["open_since"] is None
