"""Task files: both loaders, and a specific error for every kind of bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from aiscientist.task import MetricSpec, TaskError, load_task

TINY = Path(__file__).parents[1] / "fixtures" / "tiny"


def tiny_copy(tmp_path: Path, **changes: object) -> Path:
    """A copy of the tiny task with some fields changed (None deletes a field)."""
    shutil.copytree(TINY / "repo", tmp_path / "repo")
    raw = yaml.safe_load((TINY / "task.yaml").read_text())
    for key, value in changes.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_tiny_task_loads_with_absolute_paths() -> None:
    task = load_task(TINY / "task.yaml")
    assert task.name == "tiny-quadratic"
    assert task.repository == (TINY / "repo").resolve()
    assert task.metric == MetricSpec(dataset="quadratic", name="mse", direction="min")
    assert task.metric.key == "mse_mean" and task.metric.better(0.1, 0.2)
    assert task.is_editable("train.py") and not task.is_editable("evaluate.py")
    assert task.is_hidden("heldout/seed.json") and not task.is_hidden("data.py")
    assert task.budget.steps == 5 and task.test_commands
    assert "Optimise quadratic/mse (min)" in task.summary()


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"colour": "blue"}, "colour", "unknown field"),
        ({"baseline": "high"}, "baseline", "valid number"),
        ({"commands": []}, "commands", "non-empty command list"),
        ({"commands": ["python train.py", "  "]}, "commands", "empty command"),
        ({"editable": ["train.py", "model/*.py"]}, "editable", "matches no file"),
        ({"protected": ["evaluate.py", "train.py"]}, "editable", "both editable and protected"),
        ({"repository": "nowhere"}, "repository", "folder not found"),
        ({"metric": None}, "metric", "must name the metric"),
        ({"metric": {"dataset": "q", "name": "mse", "direction": "up"}}, "metric.direction", "'max' or 'min'"),
        ({"paper": "paper.md"}, "paper", "file not found"),
    ],
)
def test_bad_task_names_file_field_and_reason(tmp_path: Path, changes: dict, field: str, reason: str) -> None:
    path = tiny_copy(tmp_path, **changes)
    with pytest.raises(TaskError) as caught:
        load_task(path)
    assert caught.value.field == field
    assert reason in caught.value.reason
    assert str(path) in str(caught.value)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="no such file"):
        load_task(tmp_path / "absent.yaml")
    bad = tmp_path / "task.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(TaskError, match="invalid YAML"):
        load_task(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(TaskError, match="expected a mapping"):
        load_task(bad)


def _fml_checkout(tmp_path: Path) -> Path:
    """A miniature FML-bench checkout: root/ml_tasks/Tiny/ and root/workspace/Tiny/repo/."""
    root = tmp_path / "fml"
    folder = root / "ml_tasks" / "Tiny"
    repo = root / "workspace" / "Tiny" / "repo"
    shutil.copytree(TINY / "repo", repo)
    folder.mkdir(parents=True)
    shutil.move(repo / "evaluate.py", folder / "evaluate.py")
    (folder / "config.json").write_text(
        json.dumps(
            {
                "repo_dir": "workspace/Tiny/repo",
                "target_files": ["train.py", "config.py"],
                "related_files": ["data.py"],
                "read_only_files": ["evaluate.py"],
                "setup_commands": ["cp ../../../ml_tasks/Tiny/evaluate.py ./"],
                "do_preprocess": True,
                "preprocess_commands": ["cp ../../../ml_tasks/Tiny/evaluate.py ./"],
                "execute_commands": [
                    "python train.py",
                    "python evaluate.py --split val && mkdir -p results && mv final_info.json results/",
                ],
                "exp_running_dir": "results/",
                "do_postprocess": False,
                "postprocess_commands": ["echo never"],
            }
        )
    )
    (folder / "prompt.json").write_text(
        json.dumps({"system": "You are a researcher.", "task_description": "Lower the MSE."})
    )
    (folder / "baseline_results").mkdir()
    (folder / "baseline_results" / "final_info.json").write_text(
        json.dumps({"quadratic": {"means": {"mse_mean": 0.6072}, "stderrs": {}, "final_info_dict": {}}})
    )
    return folder


def test_fml_folder_loads_and_rewrites_reaching_back_paths(tmp_path: Path) -> None:
    folder = _fml_checkout(tmp_path)
    task = load_task(folder, MetricSpec(dataset="quadratic", name="mse", direction="min"))
    evaluate = str((folder / "evaluate.py").resolve())
    assert task.setup_commands == [f"cp {evaluate} ./"]
    assert task.preprocess_commands == [f"cp {evaluate} ./"]
    assert task.commands == [  # an && chain: one sandbox invocation per command (docs/contracts.md, "Scoring")
        "python train.py",
        "python evaluate.py --split val",
        "mkdir -p results",
        "mv final_info.json results/",
    ]
    assert not task.score_isolated
    assert task.postprocess_commands == []  # do_postprocess: false
    assert task.metrics_file == "results/final_info.json"
    assert task.baseline == pytest.approx(0.6072)
    assert task.protected == ["evaluate.py"] and task.editable == ["train.py", "config.py"]
    assert "Lower the MSE." in task.description


def test_fml_folder_metric_from_root_configs_or_error(tmp_path: Path) -> None:
    folder = _fml_checkout(tmp_path)
    with pytest.raises(TaskError, match="no metric chosen"):
        load_task(folder)
    configs = folder.parent.parent / "configs"
    configs.mkdir()
    (configs / "other.yaml").write_text(
        "benchmark: {name: Other}\nmetrics: {include_datasets: [x], include_metrics: [y_mean]}\n"
    )
    (configs / "tiny.yaml").write_text(
        "benchmark: {name: Tiny}\nmetrics: "
        "{optimization_direction: lower, include_datasets: [quadratic], include_metrics: [mse_mean]}\n"
    )
    assert load_task(folder).metric == MetricSpec(dataset="quadratic", name="mse_mean", direction="min")
    (folder / "config.json").write_text("{not json")
    with pytest.raises(TaskError, match="invalid JSON"):
        load_task(folder)
