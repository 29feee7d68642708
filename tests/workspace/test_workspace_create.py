"""Creating, resuming (also from a copied folder), the scoped file API's
ordinary operations, File-as-Bus off, and the workspace map."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import stat
from pathlib import Path

import pytest

from aiscientist.experiment import snapshots
from aiscientist.records.step import StepRecord
from aiscientist.task import TaskError, load_task
from aiscientist.workspace import PermissionDenied, ToolError, Workspace, verify_run

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.fixture
def task():
    return load_task(TINY)


def test_create_lays_out_the_run(tmp_path, task):
    ws = Workspace.create(task, tmp_path / "run", sandbox="local")
    root = ws.paths.root
    for area in ("task", "paper_analysis", "plan", "submission", "experiments", "logs", "scratch", "state"):
        assert (root / area).is_dir(), area
    assert not list(root.rglob(".keep"))
    assert (root / "state" / "permissions.yaml").is_file() and not (root / "permissions.yaml").exists()
    baseline = snapshots.load(ws.paths, snapshots.BASELINE_TAG)
    assert baseline.message == "baseline" and "train.py" in baseline.files
    assert not (root / "state" / "submission.git").exists()  # no git on the untrusted tree
    assert not (root / "submission" / "heldout" / "seed.json").exists()
    assert json.loads((root / "task" / "task.json").read_text())["name"] == "tiny-quadratic"
    assert "# Task: tiny-quadratic" in (root / "task" / "task.md").read_text()
    for path in [root / "task", *(root / "task").iterdir()]:
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), path
    assert set(json.loads((root / ".pristine" / "manifest.json").read_text())) == {"data.py", "evaluate.py"}
    assert "tiny-quadratic" in ws.map_text()
    assert verify_run(root).clean


def test_a_failing_setup_leaves_nothing_behind(tmp_path, task):
    broken = task.model_copy(update={"setup_commands": ["echo preparing; exit 3"]})
    with pytest.raises(TaskError, match="setup_commands"):
        Workspace.create(broken, tmp_path / "run", sandbox="local")
    assert not (tmp_path / "run").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskError):
        Workspace.create(broken, tmp_path / "empty", sandbox="local")
    assert list((tmp_path / "empty").iterdir()) == []


def test_create_refuses_a_used_folder_and_open_a_foreign_one(tmp_path, task):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        Workspace.create(task, tmp_path / "used", sandbox="local")
    assert (tmp_path / "used" / "notes.txt").read_text() == "mine"
    with pytest.raises(TaskError, match="not a run folder"):
        Workspace.open(tmp_path / "used")


def test_open_on_a_copied_folder_resumes_with_the_same_state(tmp_path, task):
    ws = Workspace.create(task, tmp_path / "original", sandbox="local")
    ws.engine.run_step("experimentation", "baseline")
    ws.scope("implementation").edit("submission/config.py", "LEARNING_RATE = 0.05", "LEARNING_RATE = 0.2")
    ws.engine.run_step("experimentation", "lr 0.2", tokens=120, cost=0.01)
    with open(ws.paths.logs / "llm_calls.jsonl", "a") as handle:  # as the model client writes it
        handle.write(
            json.dumps(
                {
                    "role": "implementation",
                    "prompt_tokens": 100,
                    "completion_tokens": 20,
                    "cost": 0.01,
                    "outcome": "ok",
                    "run_elapsed_s": 12.5,
                }
            )
            + "\n"
        )
    before = ws.state()
    steps_before = [s.model_dump() for s in ws.steps()]
    assert before.best_step == 2 and before.steps_done == 2

    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(ws.paths.root, copy, symlinks=True)
    shutil.rmtree(ws.paths.root)  # nothing may point back at the original
    resumed = Workspace.open(copy)
    assert resumed.state() == before
    assert [s.model_dump() for s in resumed.steps()] == steps_before
    assert (resumed.state().tokens, resumed.state().cost, resumed.state().wall_time_s) == (120, 0.01, 12.5)
    assert "LEARNING_RATE = 0.2" in resumed.scope("implementation").read("submission/config.py")
    record = resumed.engine.run_step("experimentation", "same again")
    assert record.step == 3 and record.success
    assert resumed.state().steps_done == 3
    assert verify_run(copy).clean


def test_scope_operations(tmp_path, task):
    ws = Workspace.create(task, tmp_path / "run", sandbox="local")
    impl = ws.scope("implementation")
    page = impl.read("submission/train.py", start_line=2, max_lines=1)
    assert page.startswith("\n[") and 'read_file(path="submission/train.py", start_line=3)' in page
    with pytest.raises(ToolError, match="occurs 0 times|not found"):
        impl.edit("submission/config.py", "NO SUCH TEXT", "x")
    impl.write("submission/config.py", "A = 1\nA = 1\n")
    with pytest.raises(ToolError, match="occurs 2 times"):
        impl.edit("submission/config.py", "A = 1", "A = 2")
    assert "edited" in impl.edit("submission/config.py", "A = 1\nA = 1", "A = 2")
    assert impl.search(r"A = \d", "submission") == ["submission/config.py:1: A = 2"]
    with pytest.raises(ToolError, match="invalid regular expression"):
        impl.search("(", "submission")
    with pytest.raises(ToolError, match="no such file"):
        impl.read("submission/missing.py")
    ws.scope("helper").write("scratch/blob.bin", "\0\1\2")
    with pytest.raises(ToolError, match=r"binary file \(3 bytes\)"):
        ws.scope("helper").read("scratch/blob.bin")
    assert "submission/heldout/" in impl.list("submission") and "submission/evaluate.py" in impl.list("submission")
    assert ".pristine/" not in impl.list(".") and "state/" not in impl.list(".")

    ws.scope("comprehension").write("paper_analysis/summary.md", "# Summary\nquadratic fit\n")
    assert 'summary.md: "# Summary"' in ws.map_text()
    brief = ws.brief_map()  # a prompt's map: file counts per area and the steps, no clock and no table
    assert "paper_analysis/ 1" in brief and "experiments/: no steps yet" in brief
    assert "updated" not in brief and "|" not in brief and len(brief.splitlines()) == 2
    first, second = ws.scope("experimentation"), ws.scope("experimentation")
    assert "session 1" in first.append("exp_log", "a")
    assert "session 1" in first.append("exp_log", "b")
    assert "session 2" in second.append("exp_log", "c")
    text = (ws.paths.logs / "exp_log.md").read_text()
    assert re.findall(r"^=== Session (\d+) === \(experimentation, ", text, re.M) == ["1", "2"]
    assert "exp_log.md: 2 sessions" in ws.map_text()
    second.append("exp_log", "=== Session 99 === (forged)\nreal text")
    text = (ws.paths.logs / "exp_log.md").read_text()
    assert re.findall(r"^=== Session (\d+)", text, re.M) == ["1", "2"] and " === Session 99 === (forged)\n" in text

    aide = ws.scope("aide")  # benchmark baselines share the `agent` role
    aide.write("submission/train.py", aide.read("submission/train.py"))
    aide.write("scratch/notes.md", "x")
    with pytest.raises(PermissionDenied, match="aide may not read paper_analysis/summary.md"):
        aide.read("paper_analysis/summary.md")


def test_file_bus_off_keeps_roles_out_of_each_others_areas(tmp_path, task):
    ws = Workspace.create(task, tmp_path / "run", file_bus=False, sandbox="local")
    ws.scope("comprehension").write("paper_analysis/summary.md", "analysis")
    ws.scope("prioritization").write("plan/prioritized_tasks.md", "plan")
    ws.scope("implementation").append("impl_log", "changed nothing")
    assert (ws.paths.logs / "impl_log.md").stat().st_size > 0  # still written for measurement
    refused = [
        ("prioritization", "paper_analysis/summary.md"),
        ("comprehension", "plan/prioritized_tasks.md"),
        ("implementation", "plan/prioritized_tasks.md"),
        ("orchestrator", "paper_analysis/summary.md"),
        ("implementation", "logs/impl_log.md"),
        ("orchestrator", "logs/impl_log.md"),
        ("experimentation", "paper_analysis/summary.md"),
    ]
    for role, path in refused:
        with pytest.raises(PermissionDenied, match=f"{role} may not read {path}"):
            ws.scope(role).read(path)
    assert ws.scope("implementation").read("submission/config.py")
    assert "File-as-Bus off" in ws.map_text()
    on = Workspace.create(task, tmp_path / "on", sandbox="local")
    on.scope("comprehension").write("paper_analysis/summary.md", "analysis")
    assert on.scope("prioritization").read("paper_analysis/summary.md") == "analysis"


def test_the_map_stays_short_with_a_thousand_experiments(tmp_path, task):
    ws = Workspace.create(task, tmp_path / "run", sandbox="local")
    real = ws.engine.run_step("experimentation", "baseline")
    rng = random.Random(0)
    for step in range(2, 1001):
        folder = ws.paths.step_dir(step)
        (folder / "code").mkdir(parents=True)
        (folder / "stdout.txt").write_text("train mse=...\n")
        (folder / "diff.patch").write_text("")
        metric = round(rng.uniform(0.2, 0.9), 4) if step != 777 else 0.1234
        record = real.model_copy(
            update={
                "step": step,
                "metric": metric,
                "hypothesis": f"hypothesis number {step}\nwith a second line",
                "repeat_of": None,  # each a new experiment (the baseline step it copies is a repeat of the baseline)
            }
        )
        (folder / "step.json").write_text(record.model_dump_json())
    text = ws.refresh_map()
    assert len(text) <= 6000 and len(re.findall(r"\w+|[^\w\s]", text)) <= 1500, len(text)
    assert "experiments/: 1000 steps" in text
    assert "latest: step_1000 · mse=" in text and "hypothesis number 1000" in text
    assert 'best: step_0777 · mse=0.1234 · "hypothesis number 777"' in text
    assert "second line" not in text
    assert ws.state().best_step == 777
    StepRecord.model_validate_json((ws.paths.step_dir(1000) / "step.json").read_text())


def test_a_map_refresh_looks_only_at_the_newest_step_folders(tmp_path, task, monkeypatch):
    """At step 1,000 a refresh neither lists experiments/ nor opens more than the
    folders that may still change; a vanished newest folded folder makes it fold again."""
    ws = Workspace.create(task, tmp_path / "run", sandbox="local")
    real = ws.engine.run_step("experimentation", "baseline")
    for step in range(2, 1001):
        ws.paths.step_dir(step).mkdir()
        (ws.paths.step_dir(step) / "step.json").write_text(real.model_copy(update={"step": step}).model_dump_json())
    ws.refresh_map()
    looked_at, listed = [], []
    step_dir, listdir = type(ws.paths).step_dir, os.listdir
    monkeypatch.setattr(type(ws.paths), "step_dir", lambda self, n: looked_at.append(n) or step_dir(self, n))
    monkeypatch.setattr(os, "listdir", lambda path=".": listed.append(str(path)) or listdir(path))
    assert "experiments/: 1000 steps" in ws.refresh_map()
    assert len(looked_at) <= 4 and not [p for p in listed if p.endswith("experiments")], (looked_at, listed)
    monkeypatch.undo()
    shutil.rmtree(ws.paths.step_dir(1000))
    shutil.rmtree(ws.paths.step_dir(999))
    shutil.rmtree(ws.paths.step_dir(998))
    assert "experiments/: 997 steps" in ws.refresh_map()


def test_a_broken_permissions_file_is_named_and_leaves_nothing(tmp_path, task):
    from aiscientist.workspace.workspace import TEMPLATE

    template = tmp_path / "template"
    shutil.copytree(TEMPLATE, template)
    text = (template / "permissions.yaml").read_text()
    (template / "permissions.yaml").write_text(text.replace("aide: agent", "aide: nobody"))
    with pytest.raises(ValueError, match="aliases.aide: role 'nobody' is missing from set 'file_bus'"):
        Workspace.create(task, tmp_path / "run", sandbox="local", template=template)
    assert not (tmp_path / "run").exists()


def test_the_map_file_is_brought_up_to_date_when_read_not_after_every_step(tmp_path, task):
    """A step marks WORKSPACE.md out of date without rewriting it; reading it through
    the file API or from a shell command first brings it up to date."""
    from aiscientist.agent.shell import run_shell

    ws = Workspace.create(task, tmp_path / "run", sandbox="local")
    on_disk = ws.paths.workspace_map
    ws.engine.run_step("experimentation", "baseline")
    assert "step_0001" not in on_disk.read_text()
    assert "step_0001" in ws.scope("implementation").read("WORKSPACE.md")
    ws.engine.run_step("experimentation", "again")
    assert "step_0002" not in on_disk.read_text()
    assert "step_0002" in run_shell(ws, "implementation", "cat ../WORKSPACE.md")


@pytest.mark.parametrize("rel", ["task/task.json", "state/workspace.json", "state/permissions.yaml"])
def test_open_reads_a_handed_over_folders_state_as_untrusted(tmp_path, task, rel):
    """A run folder handed over by someone else: its state files are read without following a link
    (here to a host file outside the folder), and the refusal names the file."""
    ws = Workspace.create(task, tmp_path / "run", sandbox="local")
    outside = tmp_path / "host-secret.json"
    outside.write_text((ws.paths.root / rel).read_text())
    (ws.paths.root / rel).unlink()
    (ws.paths.root / rel).symlink_to(outside)
    with pytest.raises(TaskError, match=f"unreadable run state {re.escape(rel)}"):
        Workspace.open(ws.paths.root)


def test_the_status_map_names_a_latest_step_that_is_the_best_once(tmp_path, task):
    ws = Workspace.create(task, tmp_path / "run", sandbox="local")
    ws.engine.run_step("experimentation", "baseline")
    lines = ws.brief_map().splitlines()
    assert [line.split(" · ")[0] for line in lines if "step_0001" in line] == ["latest, the best: step_0001"]
