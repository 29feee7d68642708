"""FML-bench `main`'s per-task metrics, as its `compute_agent_metrics.py` defines them: one
agent's run on one task (`TaskRun`, read by `bench.fml.results` or built from our runs by
`bench.fml.export`) becomes one row of its table under its own column names (`COLUMNS`).
Where the final test earns no credit (missing, crashed, unreadable, constraint violated, or every
validation step failed) the baseline's test metric stands in, as FML-bench does.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel

from aiscientist.records.accounting import Range
from aiscientist.task import ScoreRange
from bench.scoring.exploration import EXPLORATION_COLUMNS

Side = Literal["higher", "lower"]
UNLEARNING = "Unlearning_open_unlearning"
NAN = float("nan")


class TaskMeta(Range):
    """Canonical metric and normalisation range of one task."""

    dataset: str
    metric: str


def _meta(dataset: str, metric: str, direction: Side, p_best: float, p_worst: float | str) -> TaskMeta:
    return TaskMeta(
        dataset=dataset,
        metric=metric,
        direction=direction,
        p_best=p_best,
        p_worst=p_worst,  # type: ignore[arg-type]
    )


# FML-bench main's 18 tasks (its TASK_META and RANGE_META).
FML_MAIN = {
    "Causality_causalml": _meta("ihdp_test", "mae_mean", "lower", 0.0, "baseline"),
    "Causality_gcastle": _meta("synthetic_dag", "shd_mean", "lower", 0.0, "baseline"),
    "Continual_Learning_continual_learning": _meta("splitMNIST_scenario_class", "average_acc_mean", "higher", 1.0, 0.0),
    "Continual_Learning_pycil": _meta("cifar100_incremental", "avg_incremental_acc_mean", "higher", 1.0, 0.0),
    "Data_Efficiency_easyfsl": _meta("miniimagenet_test", "accuracy_mean", "higher", 1.0, 0.0),
    "Data_Efficiency_usb": _meta("cifar100_ssl", "test_acc_mean", "higher", 1.0, 0.0),
    "Fairness_and_Bias_aif360": _meta("compas", "abs_aod_mean", "lower", 0.0, 1.0),
    "Fairness_fairlearn": _meta("adult", "abs_demographic_parity_diff_mean", "lower", 0.0, 1.0),
    "Federated_Learning_PFLlib": _meta("cifar10_fl", "test_acc_mean", "higher", 1.0, 0.0),
    "Generalization_domainbed": _meta("ColoredMNIST_test_env2", "in_acc_mean", "higher", 1.0, 0.0),
    "Generalization_domainbed_officehome": _meta("OfficeHome_test_env0", "avg_acc_mean", "higher", 1.0, 0.0),
    "Privacy_opacus": _meta("cifar10_dp", "test_acc_mean", "higher", 1.0, 0.0),
    "Privacy_privacymeter": _meta("cifar10", "AUC_gap_mean", "lower", 0.0, 0.5),
    "Representation_Learning_lightly": _meta("cifar10_linear_probing", "test_acc_mean", "higher", 1.0, 0.0),
    "Representation_Learning_solo_learn": _meta("cifar100_ssl", "linear_eval_acc_mean", "higher", 1.0, 0.0),
    "Robustness_and_Reliability_art": _meta("poisoned_mnist", "defense_score_mean", "higher", 1.0, 0.0),
    "Robustness_openood": _meta("openood", "auroc_mean", "higher", 1.0, 0.0),
    UNLEARNING: _meta("tofu_unlearning", "forget_quality_mean", "lower", 0.0, "baseline"),
}

# Our FML-CPU-8 tasks (bench/tasks), ranged like their FML-bench counterparts: accuracies
# and scores in [0, 1] from 0 to 1; error-like metrics from the baseline down to 0;
# |average odds difference| from 1 down to 0; membership-inference AUC from 1 (every
# member exposed) down to 0.5 (chance).
FML_CPU8 = {
    "fml-cpu8-causality": _meta("setup_a", "abs_pct_error_of_ate_mean", "lower", 0.0, "baseline"),
    "fml-cpu8-continual-learning": _meta("splitMNIST", "average_acc_mean", "higher", 1.0, 0.0),
    "fml-cpu8-data-efficiency": _meta("MNIST_novel", "accuracy_mean", "higher", 1.0, 0.0),
    "fml-cpu8-fairness": _meta("census", "abs_average_odds_difference_mean", "lower", 0.0, 1.0),
    "fml-cpu8-generalization": _meta("ColoredMNIST", "test_env_acc_mean", "higher", 1.0, 0.0),
    "fml-cpu8-privacy": _meta("mnist", "mia_auc_mean", "lower", 0.5, 1.0),
    "fml-cpu8-representation-learning": _meta("MNIST", "linear_probe_acc_mean", "higher", 1.0, 0.0),
    "fml-cpu8-robustness": _meta("mnist_backdoor", "defense_score_mean", "higher", 1.0, 0.0),
}

RANGES: dict[str, TaskMeta] = {**FML_MAIN, **FML_CPU8}

COLUMNS = (
    "raw_test",
    "baseline_test",
    "Normalized Improvement",
    "Val-test |gap|",
    "Valid step ratio",
    "AUC-over-steps",
    "First-improvement step",
    "Late-gain fraction",
    "Best-improvement step",
    "Token cost (M)",
    "Wall-clock time (h)",
    *EXPLORATION_COLUMNS,
)
ROW_KEYS = (*COLUMNS, "note", "embedder")  # a row as `bench score` and the report print it


class ValStep(BaseModel):
    """One validation step as FML-bench's summary.json records it."""

    success: bool
    primary_metric: float | None = None


class TaskRun(BaseModel):
    """What the metrics read of one agent's run on one task."""

    task: str
    baseline_val: float | None  # baseline_results/val_info.json
    baseline_test: float | None  # baseline_results/test_info.json
    baseline_primary_metric: float | None  # the summary's own baseline (starts the curve)
    best_val_metric: float | None
    total_steps: int
    val_steps: list[ValStep]
    total_tokens: int | None = None
    total_duration_seconds: float | None = None
    test: float | None = None  # the final test's canonical metric when it earned credit
    test_status: str = "ok"  # why `test` is None: no_final_test_dir, bug_test, constraint_violated, ...


def display_transform(value: float | None, task: str) -> float | None:
    """Unlearning's forget quality is scored as −log10 (None when ≤ 0); others unchanged."""
    if value is None or math.isnan(value):
        return None
    if task == UNLEARNING:
        return -math.log10(value) if value > 0 else None
    return float(value)


def normalized_improvement(agent: float | None, baseline: float | None, meta: Range, undefined: float = NAN) -> float:
    """FML-bench's max(0, signed gain / range width). Without a value or a baseline, or on a
    zero-width range, it is `undefined`: NaN in FML-bench's table (its rule), 0 in our
    aggregates (a run that found nothing gained nothing)."""
    if agent is None or baseline is None:
        return undefined
    span = meta.span(baseline)
    if span == 0:
        return undefined
    return max(meta.gain(agent, baseline) / span, 0.0)


def range_of(name: str, direction: Literal["max", "min"], stated: ScoreRange | None) -> Range | None:
    """FML-bench's range for a task (our FML-CPU-8 entries included), else the one it states."""
    if name in RANGES:
        return Range.model_validate(RANGES[name].model_dump(include={"direction", "p_best", "p_worst"}))
    if stated is None:
        return None
    return Range.of(direction, stated.p_best, stated.p_worst)


def improvement_curve(run: TaskRun, meta: TaskMeta) -> list[float] | None:
    """Best-so-far improvement after each validation step (not clamped); None when undefined."""
    baseline = display_transform(run.baseline_primary_metric, run.task)
    if baseline is None or not run.val_steps:
        return None
    span = meta.span(baseline)
    if span == 0:
        return None
    best, curve = baseline, []
    for step in run.val_steps:
        value = display_transform(step.primary_metric, run.task)
        if value is not None and not math.isinf(value) and meta.gain(value, best) > 0:
            best = value
        curve.append(meta.gain(best, baseline) / span)
    return curve


def curve_metrics(curve: list[float] | None) -> dict[str, float]:
    """AUC, first-improvement step and late-gain fraction of an improvement curve."""
    if curve is None:
        return {"AUC-over-steps": NAN, "First-improvement step": NAN, "Late-gain fraction": NAN}
    first = next((float(i) for i, v in enumerate(curve, start=1) if v > 1e-15), NAN)
    total, half = curve[-1], curve[len(curve) // 2 - 1]
    return {
        "AUC-over-steps": sum(curve) / len(curve),
        "First-improvement step": first,
        "Late-gain fraction": (total - half) / total if total > 1e-12 else NAN,
    }


def best_improvement_step(run: TaskRun) -> float:
    """The last successful step whose metric equals the best validation metric."""
    if run.best_val_metric is None:
        return NAN
    matches = [i for i, s in enumerate(run.val_steps, start=1) if s.success and s.primary_metric == run.best_val_metric]
    return float(matches[-1]) if matches else NAN


def score(run: TaskRun, meta: TaskMeta, exploration: dict[str, float] | None = None) -> dict[str, float | str | None]:
    """One row of FML-bench's table (NaN where a metric is undefined), plus its `note`."""
    all_val_failed = run.best_val_metric is None
    raw, note = run.test, "ok" if run.test is not None else f"{run.test_status}->baseline"
    if all_val_failed:
        note = "all_val_failed->baseline"
    if raw is None or all_val_failed:
        raw = run.baseline_test
    raw_shown, baseline_shown = display_transform(raw, run.task), display_transform(run.baseline_test, run.task)
    ni_test = normalized_improvement(raw_shown, baseline_shown, meta)
    val = run.baseline_val if all_val_failed else run.best_val_metric
    ni_val = normalized_improvement(
        display_transform(val, run.task), display_transform(run.baseline_val, run.task), meta
    )
    successes = sum(1 for s in run.val_steps if s.success)
    return {
        "raw_test": _nan(raw_shown),
        "baseline_test": _nan(baseline_shown),
        "Normalized Improvement": ni_test,
        "Val-test |gap|": abs(ni_val - ni_test),
        "Valid step ratio": successes / run.total_steps if run.total_steps > 0 else NAN,
        **curve_metrics(improvement_curve(run, meta)),
        "Best-improvement step": best_improvement_step(run),
        "Token cost (M)": run.total_tokens / 1e6 if run.total_tokens is not None else NAN,
        "Wall-clock time (h)": run.total_duration_seconds / 3600.0 if run.total_duration_seconds is not None else NAN,
        **(exploration or dict.fromkeys(EXPLORATION_COLUMNS, NAN)),
        "note": note,
    }


def _nan(value: float | None) -> float:
    return NAN if value is None else value


def plain(row: dict[str, Any]) -> dict[str, Any]:
    """The row with None for NaN (JSON has no NaN)."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def shown(value: Any) -> str:
    """A row's value for a table: 4 decimals, blank where undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.4f}" if isinstance(value, float) else str(value)
