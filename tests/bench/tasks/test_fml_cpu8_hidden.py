"""Smoke tests of the eight FML-CPU-8 tasks: the hidden test's commands on a full copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aiscientist.task import load_task
from tests.bench.tasks.fml_cpu8 import SANITY, TASKS, check_metrics, run


@pytest.mark.parametrize("name", sorted(SANITY))
def test_hidden_test_command_on_a_full_copy(name: str, tmp_path: Path) -> None:
    task = load_task(TASKS / name / "task.yaml")
    repo = tmp_path / "repo"
    shutil.copytree(task.repository, repo, ignore=shutil.ignore_patterns("__pycache__", "final_info*.json"))
    result = run(task, task.test_prepare + task.test_commands + task.test_score, repo)
    assert result.ok, result.failure()
    check_metrics(task, task.metrics_path(repo, test=True), name)
