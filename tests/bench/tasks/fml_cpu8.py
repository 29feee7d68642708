"""What the FML-CPU-8 smoke tests share: the tasks at reduced size (FML_CPU8_SMOKE=1), run under
the sandbox, and the ranges a working method reaches. The tests are two files (validation,
hidden test) so the two test workers each take half."""

from __future__ import annotations

import math
from pathlib import Path

from aiscientist.records.metrics_file import load_means, read_metric
from aiscientist.sandbox import bwrap_works, get_sandbox
from aiscientist.task import Task

TASKS = Path(__file__).resolve().parents[3] / "bench" / "tasks"
ENV = {"FML_CPU8_SMOKE": "1", "FML_CPU8_SEED": "0"}
PREDICT_TEST = ["python predict.py --split test"]

# Ranges a working method reaches even at smoke size (means keys), and the command that
# must fail in a workspace without the held-out split (default: the task's test commands).
SANITY: dict[str, dict[str, tuple[float, float]]] = {
    "causality": {"abs_pct_error_of_ate_mean": (0.0, 1.0)},
    "robustness": {"clean_acc_mean": (0.4, 1.0), "attack_success_rate_mean": (0.0, 1.0)},  # chance: 0.1
    "privacy": {"accuracy_mean": (0.6, 1.0), "mia_auc_mean": (0.5, 1.0)},
    "fairness": {"accuracy_mean": (0.6, 1.0), "abs_average_odds_difference_mean": (0.0, 1.0)},
    "generalization": {},
    "data_efficiency": {},
    "representation_learning": {},
    "continual_learning": {},
}


def run(task: Task, commands: list[str], repo: Path):
    sandbox = get_sandbox("bwrap" if bwrap_works() else "local")
    return sandbox.run(
        commands,
        cwd=repo,
        timeout=task.command_timeout_s,
        env={**ENV, "PREPARE_OUT": str(repo)},  # test_prepare writes straight into the copy
        writable=[repo],
        hidden=[task.repository],
    )


def check_metrics(task: Task, path: Path, name: str) -> None:
    value = read_metric(path, task.metric.dataset, task.metric.key)
    assert math.isfinite(value)
    ranges = SANITY[name] or {task.metric.key: (0.0, 1.0)}
    means = load_means(path)[task.metric.dataset]
    for key, (low, high) in ranges.items():
        assert low <= means[key] <= high, f"{name}: {key} = {means[key]} outside [{low}, {high}]"
