"""Step accounting shared by `result.json`, the bench summaries and FML-bench's
metrics: which steps count, the direction-aware best step, gains over a baseline,
and the totals of a run (FML-bench's conventions).

A step is *completed* when it was run and recorded, whatever its outcome, and
*successful* when it produced a finite target metric, was not tampered with and
respected the task's constraints (`StepRecord.eligible`). A *repeat* (`repeat_of` set: it
ran the editable files of an earlier measured step, or the baseline's) is never progress:
it is not the best step and does not move the best-so-far curve. Its metric, when it
repeats the baseline's code, is a measurement of the baseline (`baseline_measurements`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

Direction = Literal["max", "min"]


class Step(Protocol):
    """What accounting reads of a step record (`aiscientist.records.step.StepRecord`)."""

    step: int
    metric: float | None
    repeat_of: int | None
    tokens: int
    cost: float
    duration_s: float | None

    @property
    def eligible(self) -> bool: ...


def is_better(a: float, b: float, direction: Direction) -> bool:
    """True when `a` is strictly better than `b`."""
    return a > b if direction == "max" else a < b


def signed_gain(value: float, baseline: float, direction: Direction) -> float:
    """value − baseline, sign flipped for `min` so that positive is better."""
    return value - baseline if direction == "max" else baseline - value


class Range(BaseModel):
    """A task's normalisation range (FML-bench's `p_best`, `p_worst`): a gain over the baseline
    divided by its span is the normalised improvement (`bench.scoring.fml_metrics`)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    direction: Literal["higher", "lower"]
    """The direction the improvement is scored in (after FML-bench's display transform)."""
    p_best: float
    """The best value the task's metric can reach."""
    p_worst: float | Literal["baseline"]
    """The worst value counted, or the baseline itself."""

    def span(self, baseline: float) -> float:
        return abs(self.p_best - (baseline if self.p_worst == "baseline" else self.p_worst))

    @classmethod
    def of(cls, direction: Direction, p_best: float, p_worst: float | Literal["baseline"]) -> Range:
        return cls(direction="higher" if direction == "max" else "lower", p_best=p_best, p_worst=p_worst)

    def gain(self, value: float, baseline: float) -> float:
        """value − baseline, signed so that positive is better."""
        return signed_gain(value, baseline, "max" if self.direction == "higher" else "min")


def successful(step: Step) -> bool:
    return step.eligible and step.metric is not None


def progress(step: Step) -> bool:
    """A successful step that is not a repeat: it may be the best."""
    return successful(step) and step.repeat_of is None


def baseline_measurements(runs: Sequence[float], steps: Iterable[Step]) -> list[float]:
    """The metric values the unchanged code got: the task's `baseline_runs`, then this run's
    successful steps that ran the baseline's editable files (`repeat_of == 0`)."""
    return [*runs, *(s.metric for s in steps if s.repeat_of == 0 and successful(s))]  # type: ignore[misc]


def beats_baseline(value: float, stated: float | None, measured: Sequence[float], direction: Direction) -> bool:
    """`value` is better than the baseline: than every measurement of the unchanged code when there
    is one (so a value within their spread, the baseline's own noise, is not), else than the stated
    baseline (a written number, perhaps rounded); True when there is neither."""
    if measured:
        return all(is_better(value, m, direction) for m in measured)
    return stated is None or is_better(value, stated, direction)


S = TypeVar("S", bound=Step)


def best_step(steps: Sequence[S], direction: Direction | None) -> S | None:
    """The successful step with the best metric (earliest on ties); never a repeat; None
    without a direction (a task that names no metric). The one `best_step`."""
    if direction is None:
        return None
    best: S | None = None
    for step in sorted(steps, key=lambda s: s.step):
        if progress(step) and (
            best is None or is_better(step.metric, best.metric, direction)  # type: ignore[arg-type]
        ):
            best = step
    return best


def best_so_far(steps: Sequence[Step], direction: Direction) -> list[float | None]:
    """After each completed step (in step order), the best successful metric so far (repeats skipped)."""
    curve: list[float | None] = []
    best: float | None = None
    for step in sorted(steps, key=lambda s: s.step):
        if progress(step) and (best is None or is_better(step.metric, best, direction)):  # type: ignore[arg-type]
            best = step.metric
        curve.append(best)
    return curve


@dataclass
class CallUsage:
    """What a run's model calls used, from `llm_calls.jsonl` records. A budget
    refusal is not a call; a failed call is one, with no tokens or cost. `wall_time_s`
    is the run's wall time as the latest record saw it."""

    calls: int = 0
    answered: int = 0
    tokens: int = 0
    cost: float = 0.0
    answer_tokens: int = 0  # completion tokens of the answered calls
    wall_time_s: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache
    cache_saved: float = 0.0  # the uncached price less the cost, US dollars

    @property
    def cached_share(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None

    def add(self, record: Mapping[str, Any]) -> None:
        """Count one record (a malformed one is skipped)."""
        try:
            wall = float(record.get("run_elapsed_s") or 0.0)
            if record.get("outcome") == "budget_exhausted":
                self.wall_time_s = max(self.wall_time_s, wall)
                return
            prompt, completion = int(record.get("prompt_tokens") or 0), int(record.get("completion_tokens") or 0)
            cost, cached = float(record.get("cost") or 0.0), int(record.get("cached_tokens") or 0)
            saved = float(record.get("cache_saved") or 0.0)
        except (ValueError, TypeError, AttributeError):
            return
        self.calls += 1
        self.tokens += prompt + completion
        self.cost += cost
        self.prompt_tokens += prompt
        self.cached_tokens += min(cached, prompt)
        self.cache_saved += saved
        self.wall_time_s = max(self.wall_time_s, wall)
        if record.get("outcome", "ok") == "ok":
            self.answered += 1
            self.answer_tokens += completion


def cache_fields(usage: CallUsage) -> dict[str, Any]:
    """The prompt-cache fields of `result.json` and the bench summary."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "cached_tokens": usage.cached_tokens,
        "cache_saved": round(usage.cache_saved, 8),
    }


def call_usage(records: Iterable[Mapping[str, Any]]) -> CallUsage:
    usage = CallUsage()
    for record in records:
        usage.add(record)
    return usage


def run_usage(calls: CallUsage, steps: Sequence[Step]) -> tuple[int, float]:
    """A run's (tokens, cost): the model-call log is the ground truth (some agents do
    not charge steps); the steps' charges stand in when no call was logged."""
    if calls.calls:
        return calls.tokens, calls.cost
    counted = totals(steps)
    return counted.tokens, counted.cost


class Totals(BaseModel):
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
        experiment_time_s=sum(s.duration_s or 0.0 for s in steps),
    )
