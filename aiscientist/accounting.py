"""Step accounting shared by `result.json`, the bench summaries and FML-bench's
metrics: which steps count, the direction-aware best step, gains over a baseline,
and the totals of a run (FML-bench's conventions).

A step is *completed* when it was run and recorded, whatever its outcome, and
*successful* when it produced a finite target metric, was not tampered with and
respected the task's constraints (`StepRecord.eligible`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

Direction = Literal["max", "min"]


class Step(Protocol):
    """What accounting reads of a step record (`aiscientist.experiment.StepRecord`)."""

    step: int
    metric: float | None
    tokens: int
    cost: float
    duration_s: float

    @property
    def eligible(self) -> bool: ...


def is_better(a: float, b: float, direction: Direction) -> bool:
    """True when `a` is strictly better than `b`."""
    return a > b if direction == "max" else a < b


def signed_gain(value: float, baseline: float, direction: Direction) -> float:
    """value − baseline, sign flipped for `min` so that positive is better."""
    return value - baseline if direction == "max" else baseline - value


def successful(step: Step) -> bool:
    return step.eligible and step.metric is not None


S = TypeVar("S", bound=Step)


def best_step(steps: Sequence[S], direction: Direction) -> S | None:
    """The successful step with the best metric (earliest on ties)."""
    best: S | None = None
    for step in sorted(steps, key=lambda s: s.step):
        if successful(step) and (best is None or is_better(step.metric, best.metric, direction)):  # type: ignore[arg-type]
            best = step
    return best


def best_so_far(steps: Sequence[Step], direction: Direction) -> list[float | None]:
    """After each completed step (in step order), the best successful metric so far."""
    curve: list[float | None] = []
    best: float | None = None
    for step in sorted(steps, key=lambda s: s.step):
        if successful(step) and (best is None or is_better(step.metric, best, direction)):  # type: ignore[arg-type]
            best = step.metric
        curve.append(best)
    return curve


def call_usage(records: Iterable[Mapping[str, Any]]) -> tuple[int, float]:
    """(tokens, cost) of the answered model calls (`outcome` ok) in `llm_calls.jsonl` records."""
    tokens, cost = 0, 0.0
    for record in records:
        if record.get("outcome", "ok") == "ok":
            tokens += int(record.get("prompt_tokens") or 0) + int(record.get("completion_tokens") or 0)
            cost += float(record.get("cost") or 0.0)
    return tokens, cost


class Totals(BaseModel):
    """Counts and usage over a run's steps."""

    completed: int
    successful: int
    tokens: int
    cost: float
    experiment_time_s: float


def totals(steps: Sequence[Step]) -> Totals:
    return Totals(
        completed=len(steps),
        successful=sum(1 for s in steps if successful(s)),
        tokens=sum(s.tokens for s in steps),
        cost=sum(s.cost for s in steps),
        experiment_time_s=sum(s.duration_s for s in steps),
    )
