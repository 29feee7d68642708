"""Smoke test of the FML-bench-lite robustness task at reduced size (FML_LITE_SMOKE=1):
validation in a workspace-like copy under the sandbox, where the held-out split
must be unreachable, then the hidden test command on a full copy."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from aiscientist.metrics_file import load_means, read_metric
from aiscientist.sandbox import bwrap_works, get_sandbox
from aiscientist.task import Task, load_task

TASK = Path(__file__).resolve().parents[1] / "bench" / "tasks" / "robustness" / "task.yaml"
ENV = {"FML_LITE_SMOKE": "1", "FML_LITE_SEED": "0"}
SANITY = {"clean_acc_mean": (0.4, 1.0), "attack_success_rate_mean": (0.0, 1.0)}  # training must work at smoke size (chance: 0.1)


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK)


def run(task: Task, commands: list[str], repo: Path):
    sandbox = get_sandbox("bwrap" if bwrap_works() else "local")
    return sandbox.run(commands, cwd=repo, timeout=task.command_timeout_s, env=ENV, writable=[repo], hidden=[TASK.parent])


def test_validation_runs_without_the_hidden_split(task: Task, tmp_path: Path) -> None:
    repo = tmp_path / "workspace"
    shutil.copytree(task.repository, repo, ignore=lambda d, names: [n for n in names if task.is_hidden(str(Path(d, n).relative_to(task.repository)))])
    copied = [str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file()]
    assert copied and not any(task.is_hidden(rel) for rel in copied)
    result = run(task, task.commands, repo)
    assert result.ok, result.failure()
    assert math.isfinite(read_metric(task.metrics_path(repo), task.metric))
    means = load_means(task.metrics_path(repo))[task.metric.dataset]
    for key, (low, high) in SANITY.items():
        assert low <= means[key] <= high, f"{key} = {means[key]} outside [{low}, {high}]"
    denied = run(task, task.test_commands, repo)
    assert not denied.ok
    assert "only available to the hidden test run" in denied.stderr_tail


def test_hidden_test_command_on_a_full_copy(task: Task, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(task.repository, repo, ignore=shutil.ignore_patterns("__pycache__", "final_info*.json"))
    result = run(task, task.test_commands, repo)
    assert result.ok, result.failure()
    assert math.isfinite(read_metric(task.metrics_path(repo, test=True), task.metric))
