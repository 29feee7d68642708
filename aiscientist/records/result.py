"""`result.json`: the outcome of one run (docs/contracts.md, "Run result")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from aiscientist.records.step import TestResult
from aiscientist.records.stop import StopReason


class RunResult(BaseModel):
    """What one run (solve, a bench agent, the baseline) ended with; written last, so its
    presence marks the run finished."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    task: str
    """The task's name."""
    agent: str
    """The agent that ran (`aiscientist`, a baseline, a peer, `baseline`)."""
    config: dict[str, Any] = {}
    """The run's settings as its runner saw them (model, steps, round, ...)."""
    metric: str | None = None
    """The target metric's label (`dataset/name`); None for a task without one."""
    direction: Literal["max", "min"] | None = None
    """Whether a larger or a smaller metric is better."""
    baseline: float | None = None
    """The validation baseline: the task's stated value, else the measured one (the bench)."""
    score_isolated: bool | None = None
    """False: the task's evaluator shares a process with code the agent can edit (no run / score split),
    so its scores could be forged by that code; None: a result written before the field existed."""
    best_step: int | None = None
    """The eligible step with the best metric (`accounting.best_step`)."""
    best_metric: float | None = None
    """That step's target metric."""
    best_metrics: dict[str, float] = {}
    """Every metric that step read (`dataset/key`)."""
    test: TestResult | None = None
    """The hidden test, run once on the best step's code."""
    steps_total: int = 0
    """Step records of the run."""
    steps_completed: int = 0
    """Steps that ran and were recorded, whatever their outcome."""
    steps_successful: int = 0
    """Steps with a finite target metric, untampered and within the task's constraints."""
    tokens: int = 0
    """Model tokens of the run (its model-call log; else the steps' charges)."""
    cost: float = 0.0
    """Model cost of the run at the providers' cached prices, US dollars."""
    prompt_tokens: int = 0
    """Prompt tokens of the run's model calls, cached ones included."""
    cached_tokens: int = 0
    """Of prompt_tokens, those read from a provider's prompt cache (`cached_tokens` in llm_calls.jsonl)."""
    cache_saved: float = 0.0
    """What the cache saved: the uncached price less the cost, US dollars."""
    wall_time_s: float = 0.0
    """Wall-clock seconds of the run (over its sessions)."""
    ttfe_s: float | None = None
    """Seconds from the command's start to the first counted step's end (`records/timing.py`)."""
    experiments_per_hour: float | None = None
    """Steps completed per hour of wall time."""
    baseline_s: float | None = None
    """Seconds of a baseline measurement the command made, apart from the TTFE."""
    stop_reason: StopReason | None = None
    """Why the run stopped; None: it has not ended."""
    stop_detail: str = ""
    """The stop in words, for people."""
    failure_causes: str = ""
    """The failed steps' causes counted (`causes.summarize`)."""

    @property
    def test_metric(self) -> float | None:
        return self.test.metric if self.test else None

    @property
    def test_error(self) -> str | None:
        return self.test.error if self.test else None


def write_result(path: Path, result: RunResult) -> None:
    path.write_text(result.model_dump_json(indent=1))
