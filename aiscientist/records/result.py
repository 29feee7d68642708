"""`result.json`: the outcome of one run (docs/contracts.md, "Run result")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aiscientist.records.step import TestResult
from aiscientist.records.stop import StopReason


class RunResult(BaseModel):
    task: str
    agent: str
    config: dict[str, Any] = {}
    metric: str | None = None
    direction: str | None = None
    baseline: float | None = None
    # False: the task's evaluator shares a process with code the agent can edit (no run / score split),
    # so its scores could be forged by that code; None: a result written before the field existed
    score_isolated: bool | None = None
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
    ttfe_s: float | None = None  # the command's start to the first counted step's end (records/timing.py)
    experiments_per_hour: float | None = None  # steps completed per hour of wall time
    baseline_s: float | None = None  # a baseline measurement the command made, apart from the TTFE
    stop_reason: StopReason | None = None  # None: the run has not ended
    stop_detail: str = ""
    failure_causes: str = ""


def write_result(path: Path, result: RunResult) -> None:
    path.write_text(result.model_dump_json(indent=1))
