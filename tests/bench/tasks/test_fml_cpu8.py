"""Smoke tests of the eight FML-CPU-8 tasks at reduced size (FML_CPU8_SMOKE=1):
validation (run, then score) in a workspace-like copy under the sandbox, where the
held-out split must be unreachable, then the hidden test's commands on a full copy.
Every task has the run / score split: its scorer imports no editable module."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest

from aiscientist.records.metrics_file import load_means, read_metric
from aiscientist.sandbox import bwrap_works, get_sandbox
from aiscientist.task import Task, load_task

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


@pytest.mark.parametrize("name", sorted(SANITY))
def test_validation_runs_without_the_hidden_split(name: str, tmp_path: Path) -> None:
    task = load_task(TASKS / name / "task.yaml")
    repo = tmp_path / "workspace"
    task.copy_repository(repo)
    copied = [str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file()]
    assert copied and not any(task.is_hidden(rel) for rel in copied)
    result = run(task, task.commands + task.score, repo)
    assert result.ok, result.failure()
    check_metrics(task, task.metrics_path(repo), name)
    denied = run(task, PREDICT_TEST, repo)
    assert not denied.ok
    assert "only available to the hidden test run" in denied.stderr_tail


@pytest.mark.parametrize("name", sorted(SANITY))
def test_hidden_test_command_on_a_full_copy(name: str, tmp_path: Path) -> None:
    task = load_task(TASKS / name / "task.yaml")
    repo = tmp_path / "repo"
    shutil.copytree(task.repository, repo, ignore=shutil.ignore_patterns("__pycache__", "final_info*.json"))
    result = run(task, task.test_prepare + task.test_commands + task.test_score, repo)
    assert result.ok, result.failure()
    check_metrics(task, task.metrics_path(repo, test=True), name)


@pytest.mark.parametrize("name", sorted(SANITY))
def test_the_scorer_imports_no_editable_module(name: str) -> None:
    task = load_task(TASKS / name / "task.yaml")
    assert task.score_isolated and task.artifacts == ["predictions.npz"]
    editable = {Path(p).stem for p in task.editable}
    for rel in task.scorer:
        source = (task.repository / rel).read_text()
        imported = set(re.findall(r"^(?:from|import) (\w+)", source, flags=re.M))
        assert not imported & editable, f"{name}/{rel} imports {imported & editable}"
