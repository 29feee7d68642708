"""`result.json`: the outcome of one run (DESIGN.md, "Run result")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aiscientist.agent.outcome import StopReason
from aiscientist.experiment.engine import StepRecord, TestResult
from aiscientist.records.accounting import best_step, totals
from aiscientist.records.causes import summarize
from aiscientist.task import Task


class RunResult(BaseModel):
    task: str
    agent: str
    config: dict[str, Any] = {}
    metric: str | None = None
    direction: str | None = None
    baseline: float | None = None
    best_step: int | None = None
    best_metric: float | None = None
    best_metrics: dict[str, float] = {}
    test: TestResult | None = None
    steps_total: int = 0
    steps_completed: int = 0
    steps_successful: int = 0
    tokens: int = 0
    cost: float = 0.0
    wall_time_s: float = 0.0
    stop_reason: StopReason | None = None  # None: the run has not ended
    stop_detail: str = ""
    failure_causes: str = ""


def summarise(task: Task, agent: str, steps: list[StepRecord], **extra: Any) -> RunResult:
    """Counts and the best eligible step from a run's step records (`aiscientist.records.accounting`);
    `extra` sets or overrides fields (a run's own model usage replaces the steps' sum)."""
    best = best_step(steps, task.metric.direction) if task.metric else None
    counts = totals(steps)
    fields: dict[str, Any] = {
        "task": task.name,
        "agent": agent,
        "metric": task.metric.label if task.metric else None,
        "direction": task.metric.direction if task.metric else None,
        "baseline": task.baseline,
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
    return RunResult(**{**fields, **extra})


def write_result(path: Path, result: RunResult) -> None:
    path.write_text(result.model_dump_json(indent=1))
