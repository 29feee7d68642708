"""Agent against agent on each task, paired by round: the mean difference of their scores
and a bootstrap interval that tells a difference from noise."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from aiscientist.records.accounting import signed_gain
from aiscientist.records.cell import CellSummary
from bench.scoring.metrics import group_by

BOOTSTRAP_SAMPLES = 5000
LEVEL = 0.95


class Pairing(BaseModel):
    """Agent `a` against agent `b` on one task; differences are signed so that a
    positive value means `a` scored better."""

    task: str
    a: str
    b: str
    rounds: int
    mean_diff: float
    low: float
    high: float
    win_rate: float  # a's wins over the paired rounds, ties counted half

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return f"{self.a} better"
        if self.high < 0:
            return f"{self.b} better"
        return "within noise"


def bootstrap_ci(
    diffs: Sequence[float], samples: int = BOOTSTRAP_SAMPLES, level: float = LEVEL, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `diffs` (a fixed seed: reports repeat)."""
    values = np.asarray(diffs, dtype=float)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(samples, len(values)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def paired_comparisons(runs: Sequence[CellSummary]) -> list[Pairing]:
    """Every pair of agents on every metric task, over the rounds both scored (two at least)."""
    out = []
    scored = [r for r in runs if r.kind == "improve" and r.score is not None]
    for task, task_runs in group_by(scored, lambda r: r.task).items():
        scores = {agent: {r.round: r for r in rs} for agent, rs in group_by(task_runs, lambda r: r.agent).items()}
        for a, b in itertools.combinations(scores, 2):
            rounds = sorted(scores[a].keys() & scores[b].keys())
            if len(rounds) < 2:
                continue
            pairs = [(scores[a][k], scores[b][k]) for k in rounds]
            diffs = [signed_gain(x.score, y.score, x.direction) for x, y in pairs]  # type: ignore[arg-type]
            low, high = bootstrap_ci(diffs)
            wins = sum(1.0 if d > 0 else 0.5 if d == 0 else 0.0 for d in diffs)
            out.append(
                Pairing(
                    task=task,
                    a=a,
                    b=b,
                    rounds=len(rounds),
                    mean_diff=float(np.mean(diffs)),
                    low=low,
                    high=high,
                    win_rate=wins / len(diffs),
                )
            )
    return out
