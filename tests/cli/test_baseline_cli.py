"""`python -m aiscientist baseline` end to end, in real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.task.test_task import TINY, tiny_copy


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiscientist", *map(str, args)], capture_output=True, text=True, timeout=300
    )


def test_baseline_prints_metric_and_writes_result(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = cli("baseline", TINY / "task.yaml", "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    assert "quadratic/mse" in done.stdout and "0.6072" in done.stdout
    result = json.loads((run_dir / "result.json").read_text())
    assert result["agent"] == "baseline" and result["best_step"] == 1
    assert result["best_metric"] == pytest.approx(0.6072, abs=1e-3)
    assert result["steps_total"] == result["steps_successful"] == 1
    assert sorted(p.name for p in (run_dir / "experiments").iterdir()) == ["step_0001"]
    assert cli("verify", run_dir).returncode == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"colour": "blue"}, "colour: unknown field"),
        ({"baseline": "high"}, "baseline: Input should be a valid number"),
        ({"commands": []}, "commands: an improve task needs a non-empty command list"),
        ({"editable": ["nothing/*.py"]}, "editable: glob 'nothing/*.py' matches no file"),
        ({"protected": ["evaluate.py", "config.py"]}, "editable: config.py is both editable and protected"),
        (
            {"protected": ["evaluate.py", "data.py", "scorer.py"], "scorer": ["evaluate.py", "data.py"]},
            "protected: 'scorer.py' is still missing after the setup commands ran",
        ),
        ({"scorer": ["evaluate.py", "train.py"]}, "scorer: train.py is neither protected nor hidden"),
        (
            {"score": ["python evaluate.py --split val"], "scorer": ["evaluate.py"]},
            "scorer: evaluate.py: line 8: from data import make_split loads data.py, which is not a scorer file",
        ),  # fmt: skip
        (
            {"score": ["python evaluate.py --config config.py"]},
            "score: 'python evaluate.py --config config.py' names config.py, which its sandbox invocation does not see",
        ),  # fmt: skip
        ({"hidden": ["heldout/*", "data.py"]}, "hidden: data.py is both protected ('data.py') and hidden"),
        ({"artifacts": ["*.py"]}, "artifacts: '*.py' could match code"),
        ({"test_score": []}, "test_score: a task with score and test_commands must say how"),
        ({"setup_commands": ["exit 4"]}, "setup_commands: command exited 4: exit 4"),
    ],
)
def test_bad_task_exits_2_and_creates_nothing(tmp_path: Path, changes: dict, message: str) -> None:
    task_file = tiny_copy(tmp_path, **changes)
    run_dir = tmp_path / "run"
    done = cli("baseline", task_file, "--run-dir", run_dir)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{task_file}: {message}" in done.stderr  # on one line: errors are not wrapped at 80 columns
    assert not run_dir.exists()


def test_missing_task_file_exits_2(tmp_path: Path) -> None:
    done = cli("baseline", tmp_path / "nope.yaml", "--run-dir", tmp_path / "run")
    assert done.returncode == 2 and "no such file" in done.stderr
    assert not (tmp_path / "run").exists()
