"""Per-run summaries (`CellSummary`) and the per-task / per-agent aggregation the report prints.

Normalised improvement is FML-bench's `max(0, gain / |p_best - p_worst|)` on the task's fixed
range (`bench.scoring.fml_metrics`); a task without one (the seed paper's protocol) is ranged over the
baseline and every compared run's value on it. Steps-to-target is the first step whose
best-so-far reaches the weakest compared agent's best. Agents are compared pairwise, round k
against round k per task, with bootstrap confidence intervals and win rates.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np
from pydantic import BaseModel

from aiscientist.records.accounting import Direction, Range, best_so_far, best_step, is_better, signed_gain, totals
from aiscientist.records.cell import CellSummary
from aiscientist.records.step import StepRecord
from aiscientist.records.timing import per_hour
from bench.scoring.fml_metrics import normalized_improvement

T = TypeVar("T")
K = TypeVar("K")


def diversity(vectors: Sequence[np.ndarray]) -> float | None:
    """Mean L2 distance of the vectors to their centroid; None without vectors."""
    if len(vectors) == 0:
        return None
    matrix = np.stack([np.asarray(v, dtype=float) for v in vectors])
    return float(np.linalg.norm(matrix - matrix.mean(axis=0), axis=1).mean())


def steps_to_target(curve: Sequence[float | None], threshold: float, direction: Direction) -> int | None:
    """1-based index of the first step whose best-so-far reaches `threshold`."""
    for index, value in enumerate(curve, start=1):
        if value is not None and not is_better(threshold, value, direction):
            return index
    return None


def curve_auc(values: Sequence[float], steps: int) -> float:
    """Mean of a normalised best-so-far curve over `steps` steps (its last value carried past its end)."""
    values = [*values[:steps], *[values[-1] if values else 0.0] * (steps - len(values))]
    return sum(values) / steps if steps else 0.0


def academic_rate(labels: Iterable[str]) -> float | None:
    """academic / judged successful steps; None when nothing was judged."""
    labels = list(labels)
    return sum(label == "academic" for label in labels) / len(labels) if labels else None


def span(values: Iterable[float | None], baseline: float | None) -> float:
    """|p_best − p_worst| over the baseline and the compared values."""
    pool = [v for v in values if v is not None] + ([baseline] if baseline is not None else [])
    return max(pool) - min(pool) if pool else 0.0


def mean_std(values: Iterable[float | None]) -> tuple[float | None, float | None, int]:
    """Mean, sample standard deviation (0 for one value) and count of the non-None values."""
    xs = [v for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return None, None, 0
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0), len(xs)


def mean_stderr(values: Iterable[float | None]) -> tuple[float | None, float | None, int]:
    mean, std, n = mean_std(values)
    return mean, (None if std is None else std / math.sqrt(n)), n


def summarize_steps(steps: Sequence[StepRecord], direction: Direction) -> dict:
    """The step-derived fields of a CellSummary (`aiscientist.records.accounting`)."""
    best = best_step(steps, direction)
    return {
        **totals(steps).model_dump(),
        "best_step": best.step if best else None,
        "best_val": best.metric if best else None,
        "curve": best_so_far(steps, direction),
    }


class AgentTask(BaseModel):
    """One agent on one task: its best round plus pooled rates and costs."""

    task: str
    agent: str
    rounds: int
    best_round: int | None
    best_val: float | None
    score: float | None
    gain: float | None
    normalised: float
    diversity: float | None
    embedder: str | None
    academic_rate: float | None
    success_rate: float | None
    completion_rate: float
    tokens: int
    tokens_per_step: float | None
    cost: float
    cost_per_step: float | None
    wall_time_s: float
    time_per_step_s: float | None
    ttfe_s: float | None = None
    experiments_per_hour: float | None = None
    cached_share: float | None = None
    cache_saved: float = 0.0
    steps_to_target: int | None
    auc: float
    curve: list[float | None]
    rubric_mean: float | None = None
    rubric_stderr: float | None = None


class TaskInfo(BaseModel):
    name: str
    kind: str
    metric: str | None
    direction: Direction
    baseline: float | None
    score_baseline: float | None
    target: float | None  # steps-to-target threshold
    score_span: float
    curve_span: float
    score_range: Range | None = None

    def scale(self, span: float) -> Range:
        """The task's fixed normalisation range, else one `span` wide (the compared values' spread)."""
        return self.score_range if self.score_range is not None else Range.of(self.direction, span, 0.0)


def best_round(runs: Sequence[CellSummary]) -> CellSummary | None:
    """The round with the best validation metric (earliest on ties); None if none succeeded."""
    scored = [r for r in runs if r.result.best_metric is not None]

    def rank(r: CellSummary) -> tuple[float, int]:
        value: float = r.result.best_metric  # type: ignore[assignment]
        return (-value if r.direction == "max" else value, r.round)

    return min(scored, key=rank, default=None)


def group_by(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """The items in lists by key, in key order."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return dict(sorted(groups.items()))  # type: ignore[type-var]


def aggregate(runs: Sequence[CellSummary]) -> tuple[list[TaskInfo], list[AgentTask]]:
    """Per-task facts and per (agent, task) metrics from every run's summary."""
    infos, cells = [], []
    for name, task_runs in group_by(runs, lambda r: r.task).items():
        first = task_runs[0]
        by_agent = group_by(task_runs, lambda r: r.agent)
        bests = {agent: best_round(rs) for agent, rs in by_agent.items()}
        reached = [b.result.best_metric for b in bests.values() if b is not None and b.result.best_metric is not None]
        target = (min if first.direction == "max" else max)(reached, default=None)
        info = TaskInfo(
            kind=first.kind,
            metric=first.result.metric,
            direction=first.direction,
            baseline=first.result.baseline,
            score_range=first.score_range,
            name=name,
            score_baseline=first.score_baseline,
            target=target,
            score_span=span((r.score for r in task_runs), first.score_baseline),
            curve_span=span((r.result.best_metric for r in task_runs), first.result.baseline),
        )
        infos.append(info)
        cells += [_agent_task(info, by_agent[agent], bests[agent]) for agent in by_agent]
    return infos, cells


def _agent_task(info: TaskInfo, runs: list[CellSummary], best: CellSummary | None) -> AgentTask:
    completed = sum(r.result.steps_completed for r in runs)
    assigned = sum(r.assigned for r in runs)
    tokens, cost = sum(r.result.tokens for r in runs), sum(r.result.cost for r in runs)
    wall = sum(r.result.wall_time_s for r in runs)
    shown = best if best is not None else min(runs, key=lambda r: r.round)
    score = best.score if best else None
    gain = None
    if score is not None and info.score_baseline is not None:
        gain = signed_gain(score, info.score_baseline, info.direction)
    rubric_mean, rubric_stderr, _ = mean_stderr(r.rubric_score for r in runs)
    return AgentTask(
        task=info.name,
        agent=runs[0].agent,
        rounds=len(runs),
        best_round=best.round if best else None,
        best_val=best.result.best_metric if best else None,
        score=score,
        gain=gain,
        normalised=_normalised(info, score),
        diversity=shown.diversity,
        embedder=shown.embedder,
        academic_rate=academic_rate(shown.labels.values()),
        success_rate=sum(r.result.steps_successful for r in runs) / completed if completed else None,
        completion_rate=min(1.0, completed / assigned) if assigned else 0.0,  # capped at 1
        tokens=tokens,
        tokens_per_step=tokens / completed if completed else None,
        cost=cost,
        cost_per_step=cost / completed if completed else None,
        wall_time_s=wall,
        time_per_step_s=wall / completed if completed else None,
        ttfe_s=mean_std(r.result.ttfe_s for r in runs)[0],
        experiments_per_hour=per_hour(completed, wall),
        cached_share=sum(r.result.cached_tokens for r in runs) / prompt
        if (prompt := sum(r.result.prompt_tokens for r in runs))
        else None,
        cache_saved=sum(r.result.cache_saved for r in runs),
        steps_to_target=steps_to_target(shown.curve, info.target, info.direction) if info.target is not None else None,
        auc=_auc(info, shown),
        curve=shown.curve,
        rubric_mean=rubric_mean,
        rubric_stderr=rubric_stderr,
    )


def _normalised(info: TaskInfo, score: float | None) -> float:
    if info.score_baseline is None:
        return 0.0
    return normalized_improvement(score, info.score_baseline, info.scale(info.score_span), undefined=0.0)


def _auc(info: TaskInfo, run: CellSummary) -> float:
    if info.baseline is None:
        return 0.0
    values = [normalized_improvement(v, info.baseline, info.scale(info.curve_span), undefined=0.0) for v in run.curve]
    # on a fixed range over the completed steps, as FML-bench main; else over the assigned steps
    return curve_auc(values, len(values) if info.score_range is not None else run.assigned)


AGENT_METRICS: tuple[tuple[str, str, str], ...] = (  # (field, column, what it means)
    (
        "normalised",
        "normalised improvement",
        "gain of the score over the baseline divided by the task's fixed range |p_best − p_worst| (FML-bench main's "
        "table; else the range of scores), 0 when worse",
    ),
    (
        "auc",
        "AUC (best-so-far)",
        "mean of the normalised best-so-far validation curve over the completed steps (fixed range) or the assigned "
        "steps (0 to 1; rises early = high)",
    ),
    ("diversity", "diversity", "mean distance of the successful steps' code embeddings to their centroid"),
    (
        "academic_rate",
        "academic contribution rate",
        "share of successful steps the judge labels a method change rather than engineering",
    ),
    ("success_rate", "step success rate", "successful steps / completed steps (pooled over rounds)"),
    ("completion_rate", "step completion rate", "completed steps / assigned steps (pooled over rounds)"),
    ("steps_to_target", "steps to target", "first step whose best-so-far reaches the weakest agent's best on the task"),
    ("tokens_per_step", "tokens / step", "model tokens per completed step"),
    ("tokens", "tokens (total)", "model tokens over all rounds"),
    ("cost_per_step", "cost $ / step", "model cost per completed step, US dollars"),
    ("cost", "cost $ (total)", "model cost over all rounds, US dollars"),
    ("time_per_step_s", "wall s / step", "wall-clock seconds per completed step"),
    ("wall_time_s", "wall s (total)", "wall-clock seconds over all rounds"),
    (
        "ttfe_s",
        "TTFE s",
        "time to first experiment: seconds from the run's start to its first counted step's end, mean over rounds "
        "(the task's baseline measurement is apart)",
    ),
    ("experiments_per_hour", "experiments / hour", "completed steps per hour of wall time (pooled over rounds)"),
    ("cached_share", "cached share", "prompt tokens read from the provider's prompt cache / all prompt tokens"),
    ("cache_saved", "cache saved $", "the uncached price less the cost at the cached price, US dollars, all rounds"),
)


def agent_averages(cells: Sequence[AgentTask]) -> dict[str, dict[str, tuple[float | None, float | None, int]]]:
    """Per agent: mean, std and count over tasks of every metric in AGENT_METRICS."""
    return {
        agent: {key: mean_std(getattr(c, key) for c in group) for key, _, _ in AGENT_METRICS}
        for agent, group in group_by(cells, lambda c: c.agent).items()
    }


def gain_lost_on_test(run: CellSummary) -> bool:
    """Validation improved on the baseline but the hidden test ended worse than the
    baseline code's hidden test: the gain did not generalise."""
    best, baseline, test = run.result.best_metric, run.result.baseline, run.result.test_metric
    if best is None or baseline is None or test is None or run.baseline_test is None:
        return False
    return is_better(best, baseline, run.direction) and is_better(run.baseline_test, test, run.direction)
