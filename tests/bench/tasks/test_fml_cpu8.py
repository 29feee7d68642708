"""Smoke tests of the eight FML-CPU-8 tasks: validation (run, then score) in a workspace-like copy
under the sandbox, where the held-out split must be unreachable; every scorer imports no editable module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aiscientist.task import load_task
from tests.bench.tasks.fml_cpu8 import PREDICT_TEST, SANITY, TASKS, check_metrics, run


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
def test_the_scorer_imports_no_editable_module(name: str) -> None:
    task = load_task(TASKS / name / "task.yaml")
    assert task.score_isolated and task.artifacts == ["predictions.npz"]
    editable = {Path(p).stem for p in task.editable}
    for rel in task.scorer:
        source = (task.repository / rel).read_text()
        imported = set(re.findall(r"^(?:from|import) (\w+)", source, flags=re.M))
        assert not imported & editable, f"{name}/{rel} imports {imported & editable}"
