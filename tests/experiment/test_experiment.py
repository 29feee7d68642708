"""The experiment engine on the tiny fixture task, with real sandboxed processes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aiscientist.experiment.engine import ExperimentEngine
from aiscientist.records.accounting import best_step
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from aiscientist.sandbox import get_sandbox
from aiscientist.task import MetricSpec, Task, TaskError, load_task
from tests.task.test_task import _fml_checkout, tiny_copy

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


def make_engine(task: Task, root: Path, backend: str = "auto") -> tuple[ExperimentEngine, list[tuple[str, dict]]]:
    paths = RunPaths(root)
    task.copy_repository(paths.submission)
    events: list[tuple[str, dict]] = []
    engine = ExperimentEngine(
        task, paths, get_sandbox(backend), on_event=lambda kind, payload: events.append((kind, payload))
    )
    engine.ensure_setup()
    return engine, events


def test_baseline_step_is_recorded(tmp_path: Path) -> None:
    task = load_task(TINY)
    engine, events = make_engine(task, tmp_path / "run")
    record = engine.run_step("baseline", "the unchanged code")
    assert record.success and record.valid and record.step == 1
    assert record.metric == pytest.approx(task.baseline, abs=1e-3)
    assert set(record.metrics) == {"quadratic/mse_mean", "quadratic/r2_mean"}
    step_dir = tmp_path / "run" / "experiments" / "step_0001"
    assert json.loads((step_dir / "step.json").read_text())["metric"] == record.metric
    assert (step_dir / "code" / "train.py").is_file() and (step_dir / "code" / "config.py").is_file()
    assert not (step_dir / "code" / "evaluate.py").exists()
    assert (step_dir / "diff.patch").read_text() == ""
    assert [k for k, _ in events] == ["tree.reset", "experiment.start", "experiment.end", "experiment.recorded"] or [
        k for k, _ in events
    ] == ["experiment.start", "experiment.end", "experiment.recorded"]
    # hidden files never reach the workspace, but the hidden test sees them
    assert not (tmp_path / "run" / "submission" / "heldout" / "seed.json").exists()
    test = engine.run_test(1)
    assert test.success and test.metric is not None and test.metric != record.metric


def test_an_edit_shows_in_diff_and_improves(tmp_path: Path) -> None:
    task = load_task(TINY)
    engine, _ = make_engine(task, tmp_path / "run")
    first = engine.run_step("agent", "baseline")
    config = engine.paths.submission / "config.py"
    config.write_text(config.read_text().replace("LEARNING_RATE = 0.05", "LEARNING_RATE = 0.1"))
    second = engine.run_step("agent", "raise the learning rate")
    assert second.step == 2 and second.metric < first.metric
    assert "+LEARNING_RATE = 0.1" in (engine.paths.root / second.diff_path).read_text()
    assert best_step(load_steps(engine.paths), task.metric_direction).step == 2


def test_tampering_is_detected_recorded_and_restored(tmp_path: Path) -> None:
    task = load_task(TINY)
    engine, events = make_engine(task, tmp_path / "run", backend="local")  # local: the write can happen
    train = engine.paths.submission / "train.py"
    train.write_text(train.read_text() + "\nopen('evaluate.py', 'a').write('# cheat\\n')\n")
    record = engine.run_step("agent", "overwrite the evaluator")
    assert not record.success and not record.valid
    assert record.error.startswith("tampering") and "evaluate.py" in record.error
    assert ("protected.tampered", {"step": 1, "files": ["evaluate.py"], "found": "after run"}) in events
    assert engine.tampered_files() == []  # restored right away
    # an edit between runs (e.g. by a careless tool) is restored before the next run
    (engine.paths.submission / "evaluate.py").write_text("print('fake')\n")
    train.write_text(train.read_text().replace("\nopen('evaluate.py', 'a').write('# cheat\\n')\n", ""))
    clean = engine.run_step("agent", "honest run")
    assert clean.success and clean.valid
    assert any(kind == "protected.restored" for kind, _ in events)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"quadratic": {"means": {"mse_mean": NaN}}}', "not finite"),
        ('{"quadratic": {"means": {"r2_mean": 0.5}}}', "metric 'mse_mean' missing"),
        ('{"quadratic": {"mse_mean": 0.5}}', "has no 'means' object"),
        ('{"other": {"means": {"mse_mean": 0.5}}}', "dataset 'quadratic' missing"),
        ('{"quadratic": {"means": {"mse_mean": "low"}}}', "not a number"),
        ("[1, 2]", "expected an object of datasets"),
    ],
)
def test_malformed_metrics_fail_the_step_with_a_reason(tmp_path: Path, content: str, reason: str) -> None:
    task = load_task(TINY)
    engine, _ = make_engine(task, tmp_path / "run")
    (engine.paths.submission / "train.py").write_text(
        f"open('final_info.json', 'w').write({content!r})\nopen('weights.json', 'w').write('[0, 0, 0]')\n"
    )
    engine.task = task.model_copy(update={"score": [], "test_score": []})  # the run writes the metrics file
    record = engine.run_step("agent", "write a broken metrics file")
    assert not record.success and record.metric is None
    assert reason in record.error


def test_missing_metrics_file_and_failing_command(tmp_path: Path) -> None:
    task = load_task(TINY)
    engine, _ = make_engine(task, tmp_path / "run")
    (engine.paths.submission / "train.py").write_text("raise SystemExit('diverged')\n")
    record = engine.run_step("agent", "crash")
    assert not record.success and record.returncodes == [1]
    assert record.error == "command exited 1: python train.py (diverged)"
    engine.task = task.model_copy(update={"commands": ["true"], "score": []})
    assert "was not written" in engine.run_step("agent", "no metrics").error
    engine.task = task.model_copy(update={"commands": ["true"]})  # no weights.json: the scorer fails
    assert "command exited 1: python evaluate.py --split val" in engine.run_step("agent", "no artifact").error


def test_constraint_violation_is_flagged_and_not_best(tmp_path: Path) -> None:
    task = load_task(
        tiny_copy(tmp_path, constraints=[{"dataset": "quadratic", "metric": "r2", "op": ">=", "value": 0.99}])
    )
    engine, _ = make_engine(task, tmp_path / "run")
    record = engine.run_step("agent", "baseline")
    assert record.success and record.constraint_violated and not record.eligible
    assert best_step([record], task.metric_direction) is None


def test_protected_file_missing_after_setup_is_a_task_error(tmp_path: Path) -> None:
    protected = ["evaluate.py", "data.py", "metrics/scorer.py"]
    task = load_task(tiny_copy(tmp_path, protected=protected, scorer=["evaluate.py", "data.py"]))
    with pytest.raises(TaskError, match="still missing after the setup commands ran"):
        make_engine(task, tmp_path / "run")


def test_fml_folder_runs_from_a_copied_repository(tmp_path: Path) -> None:
    folder = _fml_checkout(tmp_path)
    task = load_task(folder, MetricSpec(dataset="quadratic", name="mse", direction="min"))
    # evaluate.py only appears once setup has copied it in from ml_tasks/
    assert not (task.repository / "evaluate.py").exists()
    engine, _ = make_engine(task, tmp_path / "elsewhere" / "run")
    record = engine.run_step("agent", "baseline")
    assert record.success, record.error
    assert record.metric == pytest.approx(task.baseline, abs=1e-3)
    assert (engine.paths.submission / "results" / "final_info.json").is_file()
    shutil.rmtree(tmp_path / "fml" / "workspace")  # the original repo is no longer needed
    assert engine.run_step("agent", "again").success


def test_reproduce_task_step_has_no_metric_and_covers_the_whole_submission(tmp_path: Path) -> None:
    task = load_task(Path(__file__).parents[2] / "bench" / "papers" / "knn-scaling" / "task.yaml")
    engine, _ = make_engine(task, tmp_path / "run")
    (engine.paths.submission / "reproduce.sh").write_text("mkdir -p results && echo 0.9 > results/accuracy.txt\n")
    record = engine.run_step("agent", "first reproduction")
    assert record.success and record.metric is None and record.error is None
    assert "+mkdir -p results" in (engine.paths.root / record.diff_path).read_text()
    assert (engine.paths.root / record.code_path / "reproduce.sh").is_file()
    (engine.paths.submission / "reproduce.sh").write_text("exit 3\n")
    assert engine.run_step("agent", "broken").error == "command exited 3: bash reproduce.sh"
