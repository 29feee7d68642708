"""Time to first experiment and experiments per hour (`aiscientist.records.timing`), and the
command's start as the process's start."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from aiscientist.experiment.finish import summarize_run
from aiscientist.records.step import StepRecord
from aiscientist.records.timing import first_experiment_s, per_hour, process_started_at
from aiscientist.task import load_task

TASK = load_task(Path(__file__).resolve().parents[2] / "tests/fixtures/tiny/task.yaml")


def step(n: int, agent: str, started_at: str, duration_s: float) -> StepRecord:
    return StepRecord(
        step=n, agent=agent, hypothesis="h", started_at=started_at, commands=["c"], returncodes=[0],
        duration_s=duration_s, backend="local", metric=1.0, success=True, diff_path="d", code_path="c",
    )  # fmt: skip


def test_ttfe_runs_to_the_first_counted_steps_end_and_leaves_the_baseline_apart() -> None:
    start = 1_780_000_000.0  # 2026-05-28T20:26:40+00:00
    steps = [
        step(1, "baseline", "2026-05-28T20:26:50.000+00:00", 5.0),  # a baseline measurement is no experiment
        step(3, "aide", "2026-05-28T20:28:00.250+00:00", 30.5),
        step(2, "aide", "2026-05-28T20:27:30.000+00:00", 12.25),
    ]
    assert first_experiment_s(steps, start) == 50 + 12.25  # the earliest end, not the lowest number
    assert first_experiment_s(steps[:1], start) is None and first_experiment_s(steps, None) is None
    assert first_experiment_s([step(1, "aide", "not a time", 1.0)], start) is None


def test_experiments_per_hour_counts_every_completed_step_over_the_wall_time() -> None:
    assert per_hour(3, 1800.0) == 6.0 and per_hour(0, 10.0) is None and per_hour(2, 0.0) is None
    steps = [step(n, "linear", "2026-05-28T20:27:30+00:00", 1.0) for n in (1, 2, 3)]
    result = summarize_run(TASK, "linear", steps, wall_time_s=720.0)
    assert result.experiments_per_hour == 15.0 and result.ttfe_s is None  # no start given: no TTFE
    assert summarize_run(TASK, "linear", steps, wall_time_s=720.0, experiments_per_hour=1.0).experiments_per_hour == 1.0


def test_the_commands_start_is_the_processs_start_imports_included() -> None:
    before = time.time()
    code = "import time; time.sleep(0.5); from aiscientist.records.timing import process_started_at as p; print(p())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    after = time.time()
    started = json.loads(out)
    assert before - 0.05 <= started <= after - 0.5  # before its own half-second sleep, not when asked
    assert process_started_at() < before  # this test process started earlier still
