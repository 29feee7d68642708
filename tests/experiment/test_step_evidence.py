"""Step evidence in the hash chain, a step's record and end event committed as one,
and failure causes in words."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.orchestrator.run import repair_interrupted
from aiscientist.records.causes import FailureCause
from aiscientist.records.step import PENDING_RECORD
from aiscientist.task import load_task
from aiscientist.workspace import Workspace, verify_run
from tests.task.test_task import tiny_copy

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.fixture(scope="module")
def three_steps(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("evidence") / "run"
    ws = Workspace.create(load_task(TINY), root, sandbox="auto")
    for n in range(3):
        ws.engine.run_step("agent", f"step {n}")
    assert verify_run(root).clean
    return root


def _tampered_copy(three_steps: Path, tmp_path: Path, damage) -> list[str]:
    root = tmp_path / "run"
    shutil.copytree(three_steps, root, symlinks=True)
    damage(root / "experiments")
    return [str(p) for p in verify_run(root).problems]


@pytest.mark.parametrize(
    "damage, expected",
    [
        (lambda e: (e / "step_0002" / "stdout.txt").write_text("edited\n"), "experiments/step_0002/stdout.txt: edited"),
        (lambda e: (e / "step_0002" / "diff.patch").unlink(), "experiments/step_0002/diff.patch: deleted"),
        (lambda e: shutil.rmtree(e / "step_0002"), "experiments/step_0002: step folder missing"),
        (
            lambda e: (e / "step_0001" / "step.json").write_text(
                (e / "step_0001" / "step.json").read_text().replace('"metric": 0.', '"metric": 0.0')
            ),
            "experiments/step_0001/step.json: edited",
        ),
        (
            lambda e: (e / "step_0003" / "code" / "extra.py").write_text("x = 1\n"),
            "experiments/step_0003/code/extra.py: added",
        ),
    ],
    ids=["stdout-edited", "diff-deleted", "folder-deleted", "metric-changed", "file-added"],
)
def test_verify_names_every_changed_step_file(three_steps: Path, tmp_path: Path, damage, expected: str) -> None:
    problems = _tampered_copy(three_steps, tmp_path, damage)
    assert any(p.startswith(expected) for p in problems), problems


def test_a_step_interrupted_after_its_end_event_is_completed_on_resume(three_steps: Path, tmp_path: Path) -> None:
    root = tmp_path / "run"
    shutil.copytree(three_steps, root, symlinks=True)
    step_dir = root / "experiments" / "step_0003"
    os.replace(step_dir / "step.json", step_dir / PENDING_RECORD)  # killed between the event and the rename
    assert repair_interrupted(root) == [
        ("step.record_completed", {"step": 3, "action": "the record whose end event was written is made visible"})
    ]
    assert (step_dir / "step.json").is_file() and verify_run(root).clean


def test_a_step_interrupted_before_its_end_event_is_redone(three_steps: Path, tmp_path: Path) -> None:
    root = tmp_path / "run"
    shutil.copytree(three_steps, root, symlinks=True)
    step_dir = root / "experiments" / "step_0004"  # step 4 was killed before its end event
    shutil.copytree(root / "experiments" / "step_0003", step_dir)
    os.replace(step_dir / "step.json", step_dir / PENDING_RECORD)
    assert repair_interrupted(root) == []
    ws = Workspace.open(root)
    assert ws.engine.next_step() == 4
    redone = ws.engine.run_step("agent", "redone")
    assert redone.step == 4 and not (step_dir / PENDING_RECORD).exists()
    assert verify_run(root).clean, verify_run(root).problems


@pytest.mark.parametrize(
    "commands, cause, detail",
    [
        (["python missing_script.py"], FailureCause.EXIT_CODE, "missing_script.py"),
        (["no_such_program --flag"], FailureCause.COMMAND_NOT_FOUND, "no_such_program"),
        (["python train.py"], FailureCause.METRICS_FILE_MISSING, "was not written"),
        (
            [
                "python train.py",
                "python evaluate.py --split val",
                'sed -i \'s/"mse_mean": [0-9.e-]*/"mse_mean": "low"/\' final_info.json',
            ],
            FailureCause.METRIC_NOT_NUMBER,
            "is not a number",
        ),
    ],
    ids=["missing-script", "missing-program", "no-metrics-file", "metric-not-a-number"],
)
def test_failed_steps_carry_a_cause_and_a_detail(
    tmp_path: Path, commands: list[str], cause: FailureCause, detail: str
) -> None:
    task = load_task(tiny_copy(tmp_path, commands=commands, score=[], test_score=[]))  # the run writes the metrics
    ws = Workspace.create(task, tmp_path / "run", sandbox="auto")
    record = ws.engine.run_step("agent", "try")
    assert not record.success and record.cause == cause and detail in (record.error or "")
    assert (
        json.loads((tmp_path / "run" / "experiments" / "step_0001" / "step.json").read_text())["cause"] == cause.value
    )


def test_solve_prints_the_cause_of_each_failed_step_and_a_summary(tmp_path: Path) -> None:
    """(Without --no-preflight, solve refuses this task before its first step: tests/test_preflight.py.)"""
    task = tiny_copy(
        tmp_path, commands=["python train.py", "python evaluate.py --split val", "python missing_report.py"]
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "aiscientist",
            "solve",
            str(task),
            "--model",
            "offline",
            "--steps",
            "2",
            "--run-dir",
            str(tmp_path / "run"),
            "--no-preflight",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "step 1 did not count: exit code: command exited 2: python missing_report.py" in out
    assert "failure causes" in out and "exit code ×2" in out
