"""FML-bench metric functions on constructed trajectories with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aiscientist.records.accounting import Range
from aiscientist.records.cell import CellSummary
from aiscientist.records.step import StepRecord
from bench.scoring.contribution_judge import offline_label
from bench.scoring.fml_metrics import normalized_improvement
from bench.scoring.metrics import (
    academic_rate,
    agent_averages,
    aggregate,
    best_so_far,
    curve_auc,
    diversity,
    signed_gain,
    span,
    steps_to_target,
    summarize_steps,
)


def step(
    n: int,
    metric: float | None,
    success: bool = True,
    valid: bool = True,
    violated: bool = False,
    tokens: int = 0,
    duration: float = 1.0,
) -> StepRecord:
    return StepRecord(
        step=n,
        agent="t",
        hypothesis="h",
        started_at="2026-01-01T00:00:00+00:00",
        commands=["c"],
        returncodes=[0 if success else 1],
        duration_s=duration,
        backend="local",
        metric=metric if success else None,
        success=success,
        valid=valid,
        constraint_violated=violated,
        error=None if success else "command exited 1",
        diff_path="d",
        code_path="c",
        tokens=tokens,
    )


def auc(curve: list, span: float, steps: int) -> float:
    """AUC of a best-so-far curve over `steps` steps, baseline 0.5, direction max."""
    return curve_auc([normalized_improvement(v, 0.5, Range.of("max", span, 0.0), undefined=0.0) for v in curve], steps)


def test_signed_gain_and_normalised_improvement_follow_direction():
    assert signed_gain(0.8, 0.5, "max") == pytest.approx(0.3)
    assert signed_gain(0.2, 0.5, "min") == pytest.approx(0.3)
    assert signed_gain(0.7, 0.5, "min") == pytest.approx(-0.2)
    assert normalized_improvement(0.2, 0.5, Range.of("min", 0.6, 0.0)) == pytest.approx(0.5)
    assert normalized_improvement(0.7, 0.5, Range.of("min", 0.6, 0.0)) == 0.0  # worse than baseline: clipped at 0
    # no value, or a zero-width range: NaN in FML-bench's table, 0 where we aggregate
    assert math.isnan(normalized_improvement(None, 0.5, Range.of("max", 1.0, 0.0)))
    assert normalized_improvement(None, 0.5, Range.of("max", 1.0, 0.0), undefined=0.0) == 0.0
    assert math.isnan(normalized_improvement(0.9, 0.5, Range.of("max", 0.0, 0.0)))
    assert normalized_improvement(0.9, 0.5, Range.of("max", 0.0, 0.0), undefined=0.0) == 0.0


def test_best_so_far_skips_failed_tampered_and_constraint_violating_steps_direction_min():
    steps = [
        step(1, 0.5),
        step(2, None, success=False),
        step(3, 0.1, valid=False),
        step(4, 0.05, violated=True),
        step(5, 0.4),
        step(6, 0.45),
    ]
    assert best_so_far(steps, "min") == [0.5, 0.5, 0.5, 0.5, 0.4, 0.4]
    assert summarize_steps(steps, "min")["successful"] == 3
    assert steps_to_target(best_so_far(steps, "min"), 0.45, "min") == 5
    assert steps_to_target(best_so_far(steps, "min"), 0.3, "min") is None


def test_all_steps_failed():
    steps = [step(1, None, success=False), step(2, None, success=False)]
    curve = best_so_far(steps, "max")
    assert curve == [None, None]
    assert steps_to_target(curve, 0.0, "max") is None
    assert auc(curve, 1.0, 4) == 0.0
    summary = summarize_steps(steps, "max")
    assert (summary["completed"], summary["successful"], summary["best_step"], summary["best_val"]) == (
        2,
        0,
        None,
        None,
    )


def test_single_step():
    steps = [step(1, 0.9, tokens=120, duration=2.5)]
    curve = best_so_far(steps, "max")
    assert curve == [0.9]
    assert steps_to_target(curve, 0.9, "max") == 1
    # normalised value 0.4/0.5 = 0.8 at step 1, carried over the 3 unrun steps of a 4-step budget
    assert auc(curve, 0.5, 4) == pytest.approx(0.8)
    assert summarize_steps(steps, "max") | {"curve": None} == {
        "completed": 1,
        "successful": 1,
        "best_step": 1,
        "best_val": 0.9,
        "curve": None,
        "tokens": 120,
        "cost": 0.0,
        "experiment_time_s": 2.5,
    }


def test_auc_by_hand():
    curve = [None, 0.6, 0.6, 0.8]  # max, baseline 0.5, span 0.5 -> normalised 0, .2, .2, .6
    assert auc(curve, 0.5, 5) == pytest.approx((0 + 0.2 + 0.2 + 0.6 + 0.6) / 5)
    assert auc(curve, 0.5, 2) == pytest.approx((0 + 0.2) / 2)


def test_diversity_is_mean_distance_to_centroid():
    assert diversity([np.array([0.0, 0.0]), np.array([2.0, 0.0])]) == pytest.approx(1.0)
    vectors = [np.array([0.0, 0.0]), np.array([3.0, 0.0]), np.array([0.0, 3.0])]  # centroid (1, 1)
    expected = (math.sqrt(2) + math.sqrt(5) + math.sqrt(5)) / 3
    assert diversity(vectors) == pytest.approx(expected)
    assert diversity([np.array([1.0, 2.0])]) == 0.0
    assert diversity([]) is None


def test_academic_rate_and_offline_judge():
    assert academic_rate(["academic", "engineering", "engineering", "academic"]) == 0.5
    assert academic_rate([]) is None
    tuning = "--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-LR = 0.1\n+LR = 0.05\n"
    method = "--- a/t.py\n+++ b/t.py\n@@ -1 +1,2 @@\n-loss = mse(p, y)\n+loss = mse(p, y) + 0.1 * (w ** 2).sum()\n"
    assert offline_label(tuning)[0] == "engineering"
    assert offline_label(method)[0] == "academic"


def run(
    agent: str,
    task: str,
    k: int,
    curve: list,
    direction: str = "max",
    baseline: float = 0.5,
    test: float | None = None,
    **extra,
) -> CellSummary:
    good = [v for v in curve if v is not None]
    best = (max(good) if direction == "max" else min(good)) if good else None
    return CellSummary(
        task=task,
        agent=agent,
        round=k,
        direction=direction,
        baseline=baseline,
        has_test=test is not None,
        assigned=len(curve),
        completed=len(curve),
        successful=extra.pop("successful", len(good)),
        best_val=best,
        test_metric=test,
        curve=curve,
        **extra,
    )


def test_aggregate_best_round_ranges_targets_and_pooled_rates():
    runs = [
        run(
            "a",
            "T",
            1,
            [0.6, 0.6, 0.7],
            test=0.65,
            tokens=300,
            successful=3,
            labels={"1": "academic", "2": "engineering", "3": "engineering"},
            diversity=0.2,
            wall_time_s=30.0,
        ),
        run(
            "a",
            "T",
            2,
            [None, 0.8, 0.9],
            test=0.85,
            tokens=100,
            successful=2,
            labels={"2": "academic", "3": "academic"},
            diversity=0.4,
            wall_time_s=10.0,
        ),
        run("b", "T", 1, [0.55, 0.55, 0.55], test=0.52, tokens=0, successful=1, wall_time_s=3.0),
    ]
    infos, cells = aggregate(runs)
    (info,) = infos
    assert info.target == 0.55  # worst best-run among the agents (b's 0.55)
    assert info.curve_span == pytest.approx(0.9 - 0.5)  # validation bests 0.7, 0.9, 0.55 and the baseline
    assert info.score_span == pytest.approx(0.85 - 0.5)  # scores 0.65, 0.85, 0.52 and the baseline
    a, b = cells
    assert (a.agent, a.best_round, a.best_val, a.score) == ("a", 2, 0.9, 0.85)
    assert a.gain == pytest.approx(0.35)
    assert a.normalised == pytest.approx(1.0)
    assert b.normalised == pytest.approx(0.02 / 0.35)
    assert a.diversity == 0.4 and a.academic_rate == 1.0  # best round's
    assert a.success_rate == pytest.approx(5 / 6) and a.completion_rate == 1.0  # pooled over rounds
    assert (
        a.tokens == 400 and a.tokens_per_step == pytest.approx(400 / 6) and a.time_per_step_s == pytest.approx(40 / 6)
    )
    assert a.steps_to_target == 2 and b.steps_to_target == 1
    assert a.auc == pytest.approx((0 + 0.3 / 0.4 + 0.4 / 0.4) / 3)
    assert b.auc == pytest.approx(0.05 / 0.4)
    averages = agent_averages(cells)
    assert averages["a"]["normalised"] == (pytest.approx(1.0), 0.0, 1)


def test_aggregate_direction_min_and_agent_without_success():
    runs = [
        run("a", "M", 1, [0.4, 0.3], direction="min", baseline=0.5),
        run("b", "M", 1, [None, None], direction="min", baseline=0.5, successful=0),
    ]
    infos, cells = aggregate(runs)
    assert infos[0].target == 0.3 and infos[0].curve_span == pytest.approx(0.2)
    a, b = cells
    assert a.normalised == pytest.approx(1.0) and a.steps_to_target == 2 and a.auc == pytest.approx((0.5 + 1.0) / 2)
    assert (b.best_round, b.score, b.normalised, b.auc, b.steps_to_target, b.success_rate) == (
        None,
        None,
        0.0,
        0.0,
        None,
        0.0,
    )
    assert span([None, 0.3], 0.5) == pytest.approx(0.2)


def test_rubric_scores_are_mean_and_standard_error_over_rounds():
    from bench.scoring.report import rubric_table

    runs = [
        CellSummary(
            task="paper",
            agent="basic",
            round=k,
            kind="reproduce",
            assigned=5,
            completed=5,
            successful=0,
            rubric_score=score,
        )
        for k, score in enumerate([0.2, 0.5, 0.8], 1)
    ]
    runs.append(
        CellSummary(
            task="paper",
            agent="iterative",
            round=1,
            kind="reproduce",
            assigned=5,
            completed=2,
            successful=0,
            rubric_score=None,
        )
    )
    header, rows = rubric_table(runs)
    assert header[-1] == "rubric score (mean ± s.e.)"
    assert rows == [
        ["paper", "basic", "3", "3", f"0.5 ± {0.3 / math.sqrt(3):.2g}"],
        ["paper", "iterative", "1", "0", "–"],
    ]
