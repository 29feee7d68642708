"""FML-bench task folders of both branches load unchanged (tests/fixtures/fmlbench
copies their layouts) and are shown by `task show` without running anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aiscientist.cli.app import main
from aiscientist.task import MetricChoice, MetricSpec, TaskError, load_task

ROOT = Path(__file__).parents[1] / "fixtures" / "fmlbench"


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "FML-bench"
    shutil.copytree(ROOT, copy)
    return copy


def show(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main(["task", "show", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_legacy_folder_loads_without_flags(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = show(root / "ml_tasks" / "Tiny_legacy", capsys)
    assert (facts["layout"], facts["dataset"], facts["metric"], facts["direction"]) == (
        "fml-legacy",
        "points",
        "err_mean",
        "min",
    )
    assert facts["baseline_val"] == 4.0 and facts["baseline_test"] is None
    backup = root / "ml_tasks" / "Tiny_legacy" / "original_file_backup" / "evaluate.py"
    assert facts["commands"]["preprocess"] == [f"cp {backup} ./"]
    data = root / "workspace" / "Tiny_legacy" / "data"
    # an && chain becomes one command per sandbox invocation; redirections survive; the data
    # folder beside the repository is made absolute
    assert facts["commands"]["val"] == [
        "mkdir -p results_tmp",
        f"python evaluate.py --data_dir={data}/ --out ./results_tmp > results_tmp/log.txt",
    ]
    assert facts["score"]["isolated"] is False
    assert str(data) in facts["outside_paths"] and str(backup) in facts["outside_paths"]
    assert facts["files"] == {"editable": ["model.py"], "protected": ["evaluate.py"], "related": [], "hidden": []}
    assert (facts["metrics_file"], facts["outputs_dir"], facts["conda_env"]) == (
        "results_tmp/final_info.json",
        "results_tmp",
        "tiny",
    )
    assert facts["timeouts_s"] == {"preprocess": 300.0, "commands": 7200.0, "postprocess": 300.0, "test": 7200.0}


def test_main_folder_loads_without_flags(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = show(root / "ml_tasks" / "Tiny_main", capsys)
    assert (facts["layout"], facts["dataset"], facts["metric"], facts["direction"]) == (
        "fml-main",
        "curve",
        "acc_mean",
        "max",
    )
    assert (facts["baseline_val"], facts["baseline_test"]) == (0.8, 0.9)
    script = root / "ml_tasks" / "Tiny_main" / "train_eval.py"
    # the evaluation file both lines copy in first is re-copied before every run and protected
    assert facts["commands"]["preprocess"] == [f"cp {script} ./"]
    val = "python train_eval.py --split val"
    assert facts["commands"]["val"] == [val]
    assert facts["commands"]["test"] == [val, "python train_eval.py --split test"]  # FML-bench re-runs val first
    assert (facts["metrics_file"], facts["test_metrics_file"]) == (
        "results_tmp/val_info.json",
        "results_tmp/test_info.json",
    )
    assert facts["files"]["editable"] == ["algorithm.py", "split_config.json"] and facts["files"]["protected"] == [
        "train_eval.py"
    ]
    assert facts["timeouts_s"]["commands"] == 2400.0 and facts["timeouts_s"]["test"] == 4800.0


def test_show_reads_task_yaml_too(capsys: pytest.CaptureFixture[str]) -> None:
    facts = show(Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml", capsys)
    assert (facts["layout"], facts["dataset"], facts["metric"], facts["direction"]) == (
        "task.yaml",
        "quadratic",
        "mse",
        "min",
    )
    assert facts["files"]["protected"] == ["evaluate.py", "data.py"] and facts["commands"]["test"]


def test_show_prints_a_table(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "show", str(root / "ml_tasks" / "Tiny_main"), "--timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert "fml-main" in out and "acc_mean" in out and "30.0" in out


def test_metric_override_and_its_direction(root: Path) -> None:
    folder = root / "ml_tasks" / "Tiny_legacy"
    # the configs give fit_mean a direction, so --metric needs none
    assert load_task(folder, MetricChoice(dataset="points", name="fit_mean")).metric == MetricSpec(
        dataset="points", name="fit_mean", direction="max"
    )
    assert load_task(folder, MetricChoice(dataset="points", name="err", direction="max")).metric.direction == "max"
    with pytest.raises(TaskError, match="no direction for points/other_mean"):
        load_task(folder, MetricChoice(dataset="points", name="other_mean"))


def test_cli_metric_without_direction_is_an_error_not_max(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "show", str(root / "ml_tasks" / "Tiny_main"), "--metric", "curve/loss_mean"]) == 2
    assert "no direction for curve/loss_mean" in capsys.readouterr().err
    assert show(root / "ml_tasks" / "Tiny_main", capsys, "--metric", "curve/acc_mean:min")["direction"] == "min"


@pytest.mark.parametrize(
    ("task", "edit", "field", "reason"),
    [
        ("Tiny_legacy", lambda root: (root / "configs" / "tiny_legacy.yaml").unlink(), "metric", "no metric chosen"),
        (
            "Tiny_legacy",
            lambda root: _yaml(root / "configs" / "tiny_legacy.yaml", "err_mean: lower", "err_mean: null"),
            "metric",
            "no direction",
        ),
        (
            "Tiny_legacy",
            lambda root: _yaml(root / "configs" / "tiny_legacy.yaml", '["points"]', '["points", "more"]'),
            "metrics.include_datasets",
            "2 entries",
        ),
        (
            "Tiny_main",
            lambda root: _yaml(root / "ml_tasks" / "Tiny_main" / "config.json", '"higher"', '"upwards"'),
            "metric_direction",
            "higher or lower",
        ),
        (
            "Tiny_main",
            lambda root: _yaml(
                root / "ml_tasks" / "Tiny_main" / "config.json", '"test_command": "cp', '"test_command": "", "x": "'
            ),
            "test_command",
            "non-empty command",
        ),
        ("Tiny_main", lambda root: shutil.rmtree(root / "workspace" / "Tiny_main"), "repo_dir", "folder not found"),
        (
            "Tiny_main",
            lambda root: _yaml(root / "ml_tasks" / "Tiny_main" / "config.json", '"val_command"', '"other_command"'),
            "(file)",
            "neither an FML-bench main task",
        ),
    ],
)
def test_bad_fml_folders_name_file_field_and_reason(root: Path, task: str, edit, field: str, reason: str) -> None:
    edit(root)
    with pytest.raises(TaskError) as caught:
        load_task(root / "ml_tasks" / task)
    assert caught.value.field == field and reason in caught.value.reason


def _yaml(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_preflight_accepts_scripts_the_task_copies_in_first(root: Path) -> None:
    from aiscientist.orchestrator.preflight import check_commands

    check_commands(load_task(root / "ml_tasks" / "Tiny_legacy"))  # postprocess: cp postprocess.py ./, then run it
    _yaml(
        root / "ml_tasks" / "Tiny_main" / "config.json",
        "--split val",
        "--split val && cp ../../../ml_tasks/Tiny_legacy/postprocess.py ./ && python postprocess.py",
    )
    check_commands(load_task(root / "ml_tasks" / "Tiny_main"))  # the same within one line
    _yaml(root / "ml_tasks" / "Tiny_main" / "config.json", "python postprocess.py", "python missing.py")
    with pytest.raises(TaskError, match="script 'missing.py' does not exist"):
        check_commands(load_task(root / "ml_tasks" / "Tiny_main"))
