"""`solve` checks cheaply before its first step and stops with exit 2, spending nothing:
commands' programs and scripts, the sandbox, the model (real loopback server)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from aiscientist.cli.app import main
from aiscientist.orchestrator.preflight import check_model, command_problems, preflight, sandbox_lookup
from aiscientist.sandbox import bwrap_works
from aiscientist.task import TaskError, load_task
from tests.fixtures.llm.fake_openai import FakeOpenAI, error, reply

TINY = Path(__file__).parents[1] / "fixtures" / "tiny"


def _task(tmp_path: Path, **changes) -> Path:
    shutil.copytree(TINY, tmp_path / "tiny")
    file = tmp_path / "tiny" / "task.yaml"
    raw = yaml.safe_load(file.read_text())
    file.write_text(yaml.safe_dump({**raw, **changes}))
    return file


def test_missing_script_exits_2_before_the_first_step(tmp_path, capsys):
    task = _task(tmp_path, commands=["python trian.py", "python evaluate.py --split val"])
    run_dir = tmp_path / "run"
    assert main(["solve", str(task), "--model", "offline", "--steps", "2", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "commands" in err and "script 'trian.py' does not exist in the submission" in err
    assert not run_dir.exists()  # nothing created, no step spent


def test_no_preflight_lets_the_run_spend_its_budget(tmp_path):
    task = _task(tmp_path, commands=["python trian.py", "python evaluate.py --split val"])
    run_dir = tmp_path / "run"
    assert (
        main(["solve", str(task), "--model", "offline", "--steps", "1", "--run-dir", str(run_dir), "--no-preflight"])
        == 1
    )
    assert (run_dir / "experiments" / "step_0001" / "step.json").is_file()
    assert main(["show", str(run_dir)]) == 0  # the run page names why the step failed
    assert "failure cause: exit code: command exited 2: python trian.py" in (run_dir / "run.html").read_text()


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("python train.py && python evaluate.py --split val", None),
        ("FOO=1 timeout 60 python train.py > out.log 2>&1; python evaluate.py", None),
        ("cd heldout && python ../train.py", None),
        ("python -m pytest -q", None),
        ("python -c 'print(1)' | cat", None),
        ("env X=1 python missing.py --lr 0.1", "script 'missing.py' does not exist"),
        ("bash run_all.sh", "script 'run_all.sh' does not exist"),
        ("./go.sh --fast", "program './go.sh' does not exist"),
        ("no-such-program-xyz --flag", "program 'no-such-program-xyz' is not installed"),
        ("python -m no_such_module_xyz", "python module 'no_such_module_xyz' is neither"),
        ("python train.py 'unclosed", "cannot parse"),
    ],
)
def test_command_problems(command, problem):
    problems = command_problems(command, TINY / "repo")
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems


def test_a_script_that_setup_makes_is_not_a_problem():
    assert command_problems("python generated.py", TINY / "repo", made_by_setup="cp ../gen/generated.py .") == []


def test_model_must_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    models = tmp_path / "models.yaml"
    with FakeOpenAI([reply("OK"), error(500)]) as server:
        models.write_text(yaml.safe_dump({"models": {"openai/fake-model": {"api_base": server.api_base}}}))
        check_model("openai/fake-model", models)
        with pytest.raises(TaskError, match="--model: openai/fake-model: HTTP 500: planned HTTP 500"):
            check_model("openai/fake-model", models)
        assert len(server.requests) == 2 and server.requests[0]["max_tokens"] == 8
    check_model("offline", None)  # offline models are not asked


def test_unusable_sandbox_exits_2(tmp_path, capsys):
    task = _task(tmp_path)
    assert (
        main(
            [
                "solve",
                str(task),
                "--model",
                "offline",
                "--run-dir",
                str(tmp_path / "run"),
                "--sandbox",
                "docker",
                "--set",
                "sandbox.image=no-such-image:none",
            ]
        )
        == 2
    )
    assert "sandbox" in capsys.readouterr().err


def test_every_shipped_task_passes_and_paper_tasks_leave_scripts_to_the_agent():
    from aiscientist.orchestrator.preflight import check_commands
    from aiscientist.task import load_task

    root = Path(__file__).resolve().parents[2] / "bench"
    tasks = sorted(root.glob("tasks/*/task.yaml")) + sorted(root.glob("papers/*/task.yaml"))
    assert len(tasks) >= 10
    for path in tasks:
        check_commands(load_task(path))  # reproduce.sh does not exist yet in a paper task
    assert command_problems("bash reproduce.sh", TINY / "repo", scripts=False) == []
    assert command_problems("no-such-program-xyz reproduce.sh", TINY / "repo", scripts=False) != []


def _host_tool(tmp_path: Path, name: str, executable: bool = True) -> Path:
    """A program on the host's PATH, in a folder of host /tmp (hidden by bwrap)."""
    folder = tmp_path / "hostbin"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("#!/bin/sh\nexit 0\n")
    (folder / name).chmod(0o755 if executable else 0o644)
    return folder


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable on this machine")
def test_a_program_the_sandbox_hides_exits_2_before_any_step(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", f"{_host_tool(tmp_path, 'hosttool-xyz')}:{os.environ['PATH']}")
    task = _task(tmp_path, commands=["hosttool-xyz && python train.py", "python evaluate.py --split val"])
    run_dir = tmp_path / "run"
    assert (
        main(
            ["solve", str(task), "--model", "offline", "--steps", "1", "--run-dir", str(run_dir), "--sandbox", "bwrap"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "program 'hosttool-xyz' is hidden by the bwrap sandbox" in err and "commands" in err
    assert not run_dir.exists()
    # the local backend shows the host's PATH: the same task passes its preflight there
    preflight(load_task(task), "offline", "local")


def test_preflight_names_a_program_that_is_not_executable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{_host_tool(tmp_path, 'plainfile-xyz', executable=False)}:{os.environ['PATH']}")
    task = load_task(_task(tmp_path, commands=["plainfile-xyz", "python evaluate.py --split val"]))
    with pytest.raises(TaskError, match="program 'plainfile-xyz' is not executable inside the local sandbox"):
        preflight(task, "offline", "local")


def test_preflight_looks_python_up_inside_the_sandbox(tmp_path):
    task = _task(
        tmp_path, commands=["python3 train.py && bash -c true", "python evaluate.py --split val", "no-such-xyz"]
    )
    lookup = sandbox_lookup(load_task(task), "auto")
    assert lookup("python") is None and lookup("python3") is None and lookup("bash") is None
    assert "not installed" in (lookup("no-such-xyz") or "")
