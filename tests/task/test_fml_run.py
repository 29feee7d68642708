"""FML-bench task folders of both branches run faithfully (tests/fixtures/fmlbench):
the evaluation files re-copied by preprocess agree with the protected-file restore,
a stale metrics file from an earlier step is never credited, tampering is still
caught, outside data is read-only, conda environments are honoured, and the main
layout's hidden final test re-runs validation before the test."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.experiment.runenv import CONDA_SETTING, _notice_base_without_conda, in_environment, readable_outside
from aiscientist.task import TaskError, load_task
from aiscientist.workspace import Workspace
from aiscientist.workspace.eventlog import read_events

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "fmlbench"


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "FML-bench"
    shutil.copytree(FIXTURE, copy)
    return copy


def kinds(ws: Workspace, kind: str) -> list[dict]:
    return [e for e in read_events(ws.paths.root) if e["kind"] == kind]


def test_legacy_steps_stale_outputs_and_tampering(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONDA_SETTING, "current")
    ws = Workspace.create(load_task(root / "ml_tasks" / "Tiny_legacy"), tmp_path / "run")
    model = ws.paths.submission / "model.py"
    first = ws.engine.run_step("t", "baseline")
    assert first.success and first.metric == pytest.approx(
        4.0
    )  # the preprocessed evaluate.py ran, not the repo's outdated one
    model.write_text(model.read_text().replace("SLOPE = 1.0", "SLOPE = 3.0"))
    assert ws.engine.run_step("t", "slope 3").metric == pytest.approx(0.0)
    assert kinds(ws, "protected.tampered") == []  # preprocess copies and the restore agree
    model.write_text("def predict(x):\n    raise ValueError('broken')\n")
    stale = ws.engine.run_step("t", "broken model")  # evaluate.py exits 0 and writes nothing
    assert not stale.success and stale.metric is None and "was not written" in stale.error
    (ws.paths.submission / "evaluate.py").write_text("print('tampered')\n")
    model.write_text(model.read_text().replace("raise ValueError('broken')", "return 3 * x"))
    after = ws.engine.run_step("t", "after tampering")  # the tampered evaluation file is put back first
    assert after.success and after.metric == pytest.approx(0.0)
    assert "evaluate.py" in kinds(ws, "tree.reset")[-1]["payload"]["paths"]
    assert (ws.paths.submission / "evaluate.py").read_text() == (
        root / "ml_tasks/Tiny_legacy/original_file_backup/evaluate.py"
    ).read_text()
    assert kinds(ws, "protected.tampered") == [] and kinds(ws, "integrity.violation") == []


def test_constraint_flag_makes_a_step_ineligible(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONDA_SETTING, "current")
    script = root / "ml_tasks" / "Tiny_legacy" / "postprocess.py"
    script.write_text(
        script.read_text().replace('"fit_mean": -mean}', '"fit_mean": -mean, "constraint_violated": True}')
    )
    ws = Workspace.create(load_task(root / "ml_tasks" / "Tiny_legacy"), tmp_path / "run")
    record = ws.engine.run_step("t", "flagged")
    assert record.metric == pytest.approx(4.0) and record.constraint_violated and not record.eligible


def test_outside_data_is_read_only(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONDA_SETTING, "current")
    task = load_task(root / "ml_tasks" / "Tiny_legacy")
    ws = Workspace.create(task, tmp_path / "run", sandbox="bwrap")
    data = root / "workspace" / "Tiny_legacy" / "data" / "points.json"
    result = ws.engine.run_commands([f"echo hacked > {data}"])
    assert not result.ok and data.read_text().startswith("[[1, 3]")


def test_conda_env_runs_through_conda_or_fails_clearly(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = load_task(root / "ml_tasks" / "Tiny_main")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv(CONDA_SETTING, raising=False)
    with pytest.raises(
        TaskError, match="conda environment 'tiny' but conda is not installed.*AISCIENTIST_CONDA=current"
    ):
        in_environment(task, ["python x.py"])
    conda = tmp_path / "bin" / "conda"
    conda.parent.mkdir()
    conda.write_text("#!/bin/sh\n")
    conda.chmod(conda.stat().st_mode | stat.S_IEXEC)
    assert in_environment(task, ["python a.py && echo ok"]) == [
        f"{conda} run --no-capture-output -n tiny bash -c 'python a.py && echo ok'"
    ]
    assert tmp_path in readable_outside(task)  # the conda installation is visible to sandboxed commands
    monkeypatch.setenv(CONDA_SETTING, "current")
    assert in_environment(task, ["python a.py"]) == ["python a.py"]


def test_conda_base_without_conda_runs_in_the_current_environment(
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    task = load_task(root / "ml_tasks" / "Tiny_main").model_copy(update={"conda_env": "base"})
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv(CONDA_SETTING, raising=False)
    _notice_base_without_conda.cache_clear()
    with caplog.at_level("WARNING"):
        assert in_environment(task, ["python a.py"]) == ["python a.py"]
        assert in_environment(task, ["python b.py"]) == ["python b.py"]
    notices = [r.getMessage() for r in caplog.records if "'base' environment" in r.getMessage()]
    assert len(notices) == 1  # one line per process, not one per command
    other = task.model_copy(update={"conda_env": "research"})
    with pytest.raises(TaskError, match="conda environment 'research' but conda is not installed"):
        in_environment(other, ["python x.py"])


@pytest.mark.slow
@pytest.mark.parametrize("task", ["Tiny_legacy", "Tiny_main"])
def test_solve_offline_end_to_end(root: Path, tmp_path: Path, task: str) -> None:
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "aiscientist",
        "solve",
        str(root / "ml_tasks" / task),
        "--model",
        "offline",
        "--steps",
        "3",
        "--run-dir",
        str(run_dir),
    ]
    env = {**os.environ, CONDA_SETTING: "current"}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((run_dir / "result.json").read_text())
    steps = [json.loads(p.read_text()) for p in sorted(run_dir.glob("experiments/step_*/step.json"))]
    assert result["steps_completed"] == len(steps) >= 1 and result["best_metric"] is not None
    assert not [e for e in read_events(run_dir) if e["kind"] in ("protected.tampered", "integrity.violation")]
    if task == "Tiny_main":  # hidden final test: val re-run (checkpoint), then the test split
        assert result["test"]["success"] and result["test"]["metric"] is not None
    else:
        assert result["test"] is None
