"""`task init REPO --run CMD --metric NAME:min|max` on small repositories nobody set up for us:
the task file it writes (quick mode and the run / score split), its baseline measured in the
sandbox, and one clear error (exit 2, nothing written) for every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from aiscientist.cli.app import main
from aiscientist.task import load_task

TRAINER = """\
import argparse

from model import loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    print("step 1 val_loss: 9.0")
    print(f"step 2 | val_loss: {loss(args.lr)!r} | lr {args.lr}")


main()
"""
MODEL = "def loss(lr):\n    return abs(lr - 0.37) + 1 / 3\n"
BASELINE = abs(0.1 - 0.37) + 1 / 3  # more digits than any rounding keeps


def repo(tmp_path: Path, trainer: str = TRAINER, **files: str) -> Path:
    folder = tmp_path / "my-trainer"
    folder.mkdir()
    (folder / "train.py").write_text(trainer)
    (folder / "model.py").write_text(MODEL)
    (folder / "notes.py").write_text("print('not reached by the run')\n")
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def init(folder: Path | str, *flags: str) -> int:
    return main(["task", "init", str(folder), *flags])


def test_quick_mode_writes_a_task_that_loads_with_the_full_baseline(tmp_path, capsys):
    folder = repo(tmp_path)
    assert init(folder, "--run", "python train.py", "--metric", "val_loss:min") == 0
    out = capsys.readouterr().out
    assert "score_isolated: false" in out and f"python -m aiscientist solve {folder / 'task.yaml'}" in out
    text = (folder / "task.yaml").read_text()
    assert "# QUICK MODE" in text and "metric_source: stdout" in text
    task = load_task(folder / "task.yaml")
    assert task.baseline == BASELINE  # written in full: the unchanged code is never a "new best"
    assert task.editable == ["model.py", "train.py"]  # what the run reaches; notes.py is not
    assert task.repository == folder and task.metric.name == "val_loss" and task.metric.direction == "min"
    assert not task.score_isolated
    assert main(["task", "show", str(folder / "task.yaml"), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["metric_source"] == "stdout" and facts["baseline_val"] == BASELINE


def test_editable_can_be_narrowed_and_the_task_written_elsewhere(tmp_path):
    folder = repo(tmp_path)
    out = tmp_path / "tasks" / "mine.yaml"
    out.parent.mkdir()
    assert init(folder, "--run", "python train.py", "--metric", "val_loss:min", "--editable", "model.py",
                "--protected", "train.py", "--out", str(out)) == 0  # fmt: skip
    task = load_task(out)
    assert task.editable == ["model.py"] and task.protected == ["train.py"] and task.repository == folder
    assert not (folder / "task.yaml").exists()


def test_a_repository_writing_final_info_json_is_read_as_such(tmp_path):
    trainer = (
        "import json\nfrom model import loss\n"
        "json.dump({'synthetic': {'means': {'val_loss_mean': loss(0.1)}}}, open('final_info.json', 'w'))\n"
    )
    folder = repo(tmp_path, trainer)
    assert init(folder, "--run", "python train.py", "--metric", "val_loss:min") == 0
    task = load_task(folder / "task.yaml")
    assert task.metric_source == "metrics_file" and task.metric.dataset == "synthetic"
    assert task.baseline == BASELINE


SCORED_TRAINER = """\
import numpy as np
from model import loss

np.save("preds.npy", np.array([loss(0.1)]))
print("trained")
"""
EVALUATE = """\
import json
import os

import numpy as np

from labels import OFFSET

value = float(np.load("preds.npy")[0]) + OFFSET
json.dump({"my-trainer": {"means": {"val_loss_mean": value}}}, open(os.path.join(os.environ["SCORE_OUT"],
          "final_info.json"), "w"))
"""


def test_split_mode_protects_the_scorer_and_scores_apart(tmp_path):
    folder = repo(tmp_path, SCORED_TRAINER, **{"evaluate.py": EVALUATE, "labels.py": "OFFSET = 0.0\n"})
    flags = ["--run", "python train.py", "--metric", "val_loss:min", "--score", "python evaluate.py"]
    assert init(folder, *flags, "--artifacts", "preds.npy") == 0
    task = load_task(folder / "task.yaml")
    assert task.score_isolated and task.score == ["python evaluate.py"] and task.artifacts == ["preds.npy"]
    assert task.scorer == ["evaluate.py", "labels.py"] and set(task.protected) == {"evaluate.py", "labels.py"}
    assert task.editable == ["model.py", "train.py"] and task.baseline == BASELINE
    assert "metric_source" not in (folder / "task.yaml").read_text()


def test_scorer_stub_writes_the_metrics_file_in_the_right_shape(tmp_path, capsys):
    folder = repo(tmp_path, SCORED_TRAINER)
    flags = ["--run", "python train.py", "--metric", "val_loss:min", "--score", "python evaluate.py"]
    assert init(folder, *flags, "--artifacts", "preds.npy", "--scorer-stub") == 0
    stub = (folder / "evaluate.py").read_text()
    assert "fill in score()" in capsys.readouterr().out and not (folder / "task.yaml").exists()
    # unfilled, the stub fails loudly: the score command is named
    assert init(folder, *flags, "--artifacts", "preds.npy") == 2
    assert "--score" in capsys.readouterr().err and not (folder / "task.yaml").exists()
    body = '    import numpy\n    return float(numpy.load("preds.npy")[0])\n'
    filled = stub.replace("    raise NotImplementedError(", body + "    raise NotImplementedError(")
    (folder / "evaluate.py").write_text(filled)
    assert init(folder, *flags, "--artifacts", "preds.npy") == 0
    assert load_task(folder / "task.yaml").baseline == BASELINE


@pytest.mark.parametrize(
    ("trainer", "flags", "field", "reason"),
    [
        (TRAINER, ["--metric", "val_loss:up"], "direction", "'up': say min (lower is better) or max"),
        (TRAINER, ["--metric", "val_loss"], "direction", "no direction"),
        ("import sys\nsys.exit('diverged')\n", ["--metric", "val_loss:min"], "run", "the unchanged code fails"),
        ("print('loss 1.0')\n", ["--metric", "val_loss:min"], "metric", "no line 'val_loss: number'"),
        ("print('val_loss: nan')\n", ["--metric", "val_loss:min"], "metric", "not finite"),
        ("print('val_loss: low')\n", ["--metric", "val_loss:max"], "metric", "is not a number: 'low'"),
        ("print(1)\n", ["--metric", "val_loss:min", "--editable", "nope/*.py"], "editable", "matches no file"),
    ],
)
def test_bad_input_is_one_clear_error_and_writes_nothing(tmp_path, capsys, trainer, flags, field, reason):
    folder = repo(tmp_path, trainer)
    before = sorted(p.name for p in folder.iterdir())
    assert init(folder, "--run", "python train.py", *flags) == 2
    err = capsys.readouterr().err
    assert f": {field}: " in err and reason in err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_no_such_repository_and_a_run_of_no_python_file(tmp_path, capsys):
    assert init(tmp_path / "nope", "--run", "python train.py", "--metric", "val_loss:min") == 2
    assert "repository: no such folder" in capsys.readouterr().err
    folder = repo(tmp_path)
    assert init(folder, "--run", "echo val_loss: 1", "--metric", "val_loss:min") == 2
    assert "name the agents' files with --editable GLOB" in capsys.readouterr().err
    assert init(folder, "--run", "python train.py", "--metric", "val_loss:min") == 0
    assert init(folder, "--run", "python train.py", "--metric", "val_loss:min") == 2  # no silent overwrite
    assert "--force" in capsys.readouterr().err


def test_solve_repo_run_keeps_the_generated_task_in_the_run_folder(tmp_path, capsys):
    folder = repo(tmp_path)
    run_dir = tmp_path / "run"
    argv = ["solve", str(folder), "--run", "python train.py", "--metric", "val_loss:min", "--model", "offline"]
    assert main([*argv, "--steps", "1", "--run-dir", str(run_dir)]) in (0, 1)
    assert "score isolated" in capsys.readouterr().out
    kept = run_dir / "task" / "source.yaml"
    assert yaml.safe_load(kept.read_text())["repository"] == str(folder)  # repeatable from anywhere
    assert load_task(kept).baseline == BASELINE and not (folder / "task.yaml").exists()
    assert json.loads((run_dir / "result.json").read_text())["score_isolated"] is False
