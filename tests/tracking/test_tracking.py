"""Tracking against a real MLflow server: a 3-step offline solve and a 2-cell bench grid appear there
(params, per-step metrics, end tags, artifacts, nested cells), read back through MLflow's client; a
killed server leaves the run's result as it was; W&B offline writes its local run; bad --track input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.config import load_config
from aiscientist.orchestrator import solve
from aiscientist.records import ledger
from aiscientist.records.paths import RunPaths
from aiscientist.task import load_task
from tests.tracking.conftest import Servers

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"


def _cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-m", "aiscientist", *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=400
    )


def _runs(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("aiscientist")
    return client.search_runs([experiment.experiment_id], max_results=1000) if experiment else []


def _history(uri: str, run_id: str, key: str) -> list[tuple[int, float]]:
    from mlflow.tracking import MlflowClient

    return [(m.step, m.value) for m in MlflowClient(uri).get_metric_history(run_id, key)]


def _artifacts(uri: str, run_id: str) -> set[str]:
    from mlflow.tracking import MlflowClient

    return {a.path for a in MlflowClient(uri).list_artifacts(run_id)}


def test_a_three_step_solve_appears_in_mlflow(mlflow_server, tmp_path):
    run_dir = tmp_path / "run"
    done = _cli(
        "solve", str(TINY), "--model", "offline", "--steps", "3", "--run-dir", str(run_dir),
        "--track", f"mlflow={mlflow_server}", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(RunPaths(run_dir).result.read_text())
    [run] = [
        r for r in _runs(mlflow_server) if r.data.tags.get("task") == "tiny-quadratic" and "round" not in r.data.tags
    ]
    assert run.info.status == "FINISHED" and run.data.tags["agent"] == "aiscientist"
    params = run.data.params
    assert params["task"] == "tiny-quadratic" and params["model"] == "offline" and params["config.file_bus"] == "True"
    rows = ledger.read(RunPaths(run_dir))
    assert _history(mlflow_server, run.info.run_id, "val_metric") == [
        (int(r["step"]), pytest.approx(float(r["metric"]), rel=1e-5)) for r in rows
    ]
    best = _history(mlflow_server, run.info.run_id, "best_so_far")
    assert [s for s, _ in best] == [1, 2, 3] and best[-1][1] == pytest.approx(result["best_metric"])
    assert {s for s, _ in _history(mlflow_server, run.info.run_id, "tokens")} == {1, 2, 3}
    assert run.data.metrics["test_metric"] == pytest.approx(result["test"]["metric"])
    assert run.data.tags["stop_reason"] == "submitted" and run.data.tags["best_step"] == str(result["best_step"])
    assert "score_isolated" in run.data.tags and "integrity_findings" in run.data.tags
    assert _artifacts(mlflow_server, run.info.run_id) == {"result.json", "run.html", "diff.patch"}


def test_a_two_cell_grid_nests_its_cells_under_one_parent(mlflow_server, tmp_path):
    out = tmp_path / "grid"
    done = _cli(
        "bench", "run", "--agents", "hpsearch", "--tasks", str(TINY), "--rounds", "2", "--steps", "2",
        "--model", "offline", "--out", str(out), "--workers", "2", "--no-progress", "--no-report",
        "--embedder", "minilm", "--track", f"mlflow={mlflow_server}", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    runs = _runs(mlflow_server)
    [parent] = [r for r in runs if r.data.tags.get("aiscientist.kind") == "grid" and r.info.run_name == "grid"]
    cells = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.data.tags["round"] for r in cells) == ["1", "2"] and parent.data.params["steps"] == "2"
    for cell in cells:
        assert cell.data.tags["agent"] == "hpsearch" and cell.data.tags["task"] == "tiny-quadratic"
        assert [s for s, _ in _history(mlflow_server, cell.info.run_id, "val_metric")] == [1, 2]
        assert cell.info.status == "FINISHED" and "result.json" in _artifacts(mlflow_server, cell.info.run_id)


def test_a_killed_tracking_server_does_not_change_the_result(mlflow_servers: Servers, tmp_path):
    """The session's server, killed after the first step (the last test here to use it; a later
    user gets a new one)."""
    uri = mlflow_servers.uri()
    config = load_config([], ["sandbox=local"])

    def kill(shown: dict) -> None:
        if shown["steps_done"] >= 1:
            mlflow_servers.stop()

    try:
        tracked = solve(load_task(TINY), tmp_path / "a", config.model_copy(update={"tracking": f"mlflow={uri}"}),
                        model="offline", steps=3, progress=kill)  # fmt: skip
    finally:
        mlflow_servers.stop()
    plain = solve(load_task(TINY), tmp_path / "b", config, model="offline", steps=3)
    keep = {"best_step", "best_metric", "steps_total", "steps_successful", "stop_reason"}
    assert tracked.model_dump(include=keep) == plain.model_dump(include=keep)
    assert [r["metric"] for r in ledger.read(RunPaths(tmp_path / "a"))] == [
        r["metric"] for r in ledger.read(RunPaths(tmp_path / "b"))
    ]


def test_wandb_offline_writes_its_local_run(tmp_path):
    pytest.importorskip("wandb")
    done = _cli(
        "baseline", str(TINY), "--run-dir", str(tmp_path / "run"), "--sandbox", "local", "--track", "wandb",
        cwd=tmp_path, WANDB_DIR=str(tmp_path), WANDB_MODE="offline", WANDB_SILENT="true",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [local] = list((tmp_path / "wandb").glob("offline-run-*"))
    assert list(local.glob("*.wandb")) and (local / "files" / "result.json").is_file()


def test_bad_track_values_say_what_to_do(tmp_path):
    bad = _cli("solve", str(TINY), "--model", "offline", "--track", "tensorboard", cwd=tmp_path)
    assert bad.returncode == 2 and "use mlflow, mlflow=URI or wandb" in bad.stderr
