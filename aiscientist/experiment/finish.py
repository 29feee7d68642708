"""The one end of every run, whoever ran it (solve, a bench cell, `baseline`): the hidden
test once on the best eligible step, then `result.json`, written last so that its presence
marks the run finished. Also the one baseline measurement: the unchanged code as a step.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from aiscientist.records import accounting
from aiscientist.records.accounting import best_step
from aiscientist.records.causes import summarize
from aiscientist.records.result import RunResult, write_result
from aiscientist.records.step import StepRecord
from aiscientist.records.stop import StopReason
from aiscientist.records.timing import BASELINE_AGENT, first_experiment_s, per_hour
from aiscientist.task import Task

if TYPE_CHECKING:
    from aiscientist.workspace import Workspace

BASELINE_HYPOTHESIS = "baseline: the unchanged code"


def finish_run(
    ws: Workspace,
    agent: str,
    steps: list[StepRecord],
    stop_reason: StopReason,
    stop_detail: str = "",
    final: bool = True,
    started: float | None = None,
    started_at: float | None = None,
    **fields: Any,
) -> RunResult:
    """Write result.json for these steps. The hidden test runs only when the run is `final`
    (not stopped to be resumed); a result.json that already holds the test of the same best
    step is kept as it is, so no run pays for, or sees, its hidden test twice. With `started`
    (a time.monotonic() reading) the wall time runs to the end of the hidden test; `started_at`
    (the command's start, a wall-clock timestamp) gives the time to first experiment."""
    task = ws.task
    best = best_step(steps, task.metric_direction)
    previous = RunResult.model_validate_json(ws.paths.result.read_text()) if ws.paths.result.is_file() else None
    if previous is not None and best is not None and previous.test is not None and previous.test.step == best.step:
        return previous
    test = ws.engine.run_test(best.step) if final and best is not None and task.test_commands else None
    if started is not None:
        fields["wall_time_s"] = round(time.monotonic() - started, 3)
    fields.setdefault("ttfe_s", first_experiment_s(steps, started_at))
    result = summarize_run(task, agent, steps, test=test, stop_reason=stop_reason, stop_detail=stop_detail, **fields)
    write_result(ws.paths.result, result)
    return result


def measure_baseline(ws: Workspace, test: bool = True, started: float | None = None) -> tuple[StepRecord, RunResult]:
    """Run the unchanged code as one step (and the hidden test on it when `test`); the wall
    time and the measurement's time (`baseline_s`) count from `started` (default: now)."""
    started = time.monotonic() if started is None else started
    record = ws.engine.run_step(agent=BASELINE_AGENT, hypothesis=BASELINE_HYPOTHESIS, baseline=True)
    measured = round(time.monotonic() - started, 3)
    result = finish_run(
        ws, BASELINE_AGENT, [record], StopReason.FINISHED, "baseline done", final=test, started=started,
        baseline_s=measured,
    )  # fmt: skip
    return record, result


def summarize_run(task: Task, agent: str, steps: list[StepRecord], **extra: Any) -> RunResult:
    """Counts and the best eligible step from a run's step records (`aiscientist.records.accounting`);
    `extra` sets or overrides fields (a run's own model usage replaces the steps' sum)."""
    best = best_step(steps, task.metric_direction)
    counts = accounting.totals(steps)
    fields: dict[str, Any] = {
        "task": task.name,
        "agent": agent,
        "metric": task.metric.label if task.metric else None,
        "direction": task.metric.direction if task.metric else None,
        "baseline": task.baseline,
        "score_isolated": task.score_isolated,
        "best_step": best.step if best else None,
        "best_metric": best.metric if best else None,
        "best_metrics": best.metrics if best else {},
        "steps_total": len(steps),
        "steps_completed": counts.completed,
        "steps_successful": counts.successful,
        "tokens": counts.tokens,
        "cost": counts.cost,
        "failure_causes": summarize((s.cause, s.error or "") for s in steps if not s.eligible and s.cause is not None),
    }
    merged = {**fields, **extra}
    merged.setdefault("experiments_per_hour", per_hour(counts.completed, merged.get("wall_time_s")))
    return RunResult(**merged)
