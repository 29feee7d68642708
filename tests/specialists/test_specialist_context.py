"""A specialist's turn: a finish in the turn of a failed call is refused (what its conversation
sends again is tested with the memory rules, tests/agent/test_memory.py); a role's answer is its file."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from aiscientist.agent.context import RunContext
from aiscientist.agent.turn import NOT_FINISHED
from aiscientist.config import RunConfig
from aiscientist.llm.config import RECORD_ENV
from aiscientist.llm.facts import read_facts
from aiscientist.orchestrator import solve
from aiscientist.orchestrator.prompts import progress_line
from aiscientist.specialists.base import TURN_RULES, append_once
from aiscientist.specialists.experimentation import stated
from aiscientist.specialists.implementation import ASKED, CHANGED, PLANNED, UNCHANGED, asked_edits, planned_edits
from aiscientist.task import load_task
from aiscientist.workspace import Workspace

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_a_finish_in_the_turn_of_a_failed_call_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir, recording = tmp_path / "run", tmp_path / "rec"
    monkeypatch.setenv(RECORD_ENV, str(recording))
    task = load_task(FIXTURES / "tiny" / "task.yaml")
    solve(
        task,
        run_dir,
        RunConfig(sandbox="local"),
        model=f"scripted:{FIXTURES / 'orchestrator' / 'finish_after_failure.yaml'}",
        steps=1,
    )
    events = [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]
    [end] = [e["payload"] for e in events if e["kind"] == "specialist.end"]
    said = "evaluate.py is protected: nothing changed"
    assert (end["summary"], end["turns"], end["ok"]) == (f"{UNCHANGED}; its summary: {said}", 2, False)
    journal = [json.loads(line) for line in (run_dir / "state" / "journal.jsonl").read_text().splitlines()]
    [edit] = [
        j["value"]["content"] for j in journal if j["kind"] == "done" and (j["value"] or {}).get("tool") == "edit_file"
    ]
    assert edit.startswith("Error: implementation may not")
    assert "evaluate.py is protected: nothing changed" in (run_dir / "logs" / "impl_log.md").read_text()
    sent = [json.loads(p.read_text())["request"]["messages"] for p in recording.glob("*.json")]
    assert any(
        m.get("content") == NOT_FINISHED for messages in sent for m in messages if m["role"] == "tool"
    )  # the model was told


def test_a_small_task_is_read_in_one_answer_and_each_role_saves_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny task's files fit whole in one prompt: comprehension reads them itself (no readers) and
    its prose answer is the analysis; prioritization's finish is the plan. Every role's prompt starts
    with the same task text, so a server's prompt cache reuses it from one role to the next."""
    run_dir, recording = tmp_path / "run", tmp_path / "rec"
    monkeypatch.setenv(RECORD_ENV, str(recording))
    task = load_task(FIXTURES / "tiny" / "task.yaml")
    model = f"scripted:{FIXTURES / 'orchestrator' / 'deliverables.yaml'}"
    models = tmp_path / "models.yaml"  # the tools in the prompt, as a local model reads them
    models.write_text(json.dumps({"models": {model: {"tool_calls": "prompt", "calls_per_reply": 1}}}))
    solve(task, run_dir, RunConfig(sandbox="local", models_file=str(models)), model=model)
    summary = (run_dir / "paper_analysis" / "summary.md").read_text()
    assert summary.startswith("# Targets and metrics") and "evaluate.py scores weights.json" in summary
    assert not list((run_dir / "paper_analysis").glob("notes_*.md"))  # no reader ran
    plan = (run_dir / "plan" / "prioritized_tasks.md").read_text()
    assert plan.startswith("## P0. raise EPOCHS")
    events = [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]
    ends = {e["payload"]["specialist"]: e["payload"] for e in events if e["kind"] == "specialist.end"}
    assert ends["comprehension"]["ok"] and ends["prioritization"]["ok"], ends
    assert not ends["implementation"]["ok"] and ends["implementation"]["summary"].startswith(UNCHANGED)
    sent = [json.loads(p.read_text())["request"]["messages"] for p in recording.glob("*.json")]
    systems = {m[0]["content"] for m in sent}
    roles = {re.search(r"^ROLE: (\S+)", s, re.M).group(1) for s in systems}
    assert roles == {"orchestrator", "comprehension", "prioritization", "implementation"}
    shared = os.path.commonprefix(sorted(systems))
    assert shared.startswith("# Task: tiny-quadratic") and "Step budget: " in shared  # the whole task text
    assert TURN_RULES in shared and "\n# Tools\n" in shared  # and the turn rules and how tools are called
    by_role = {re.search(r"^ROLE: (\S+)", s, re.M).group(1): s for s in systems}
    readers = os.path.commonprefix([by_role[r] for r in ("orchestrator", "prioritization", "implementation")])
    assert '{"name":"search_files"' in readers.splitlines()[-2]  # the read tools lead every list
    assert all(s.index("# Tools") < s.index("ROLE: ") for s in systems)  # each role's own text after them


def test_a_change_made_is_said_and_a_measured_change_is_not_asked_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, recording = tmp_path / "run", tmp_path / "rec"
    monkeypatch.setenv(RECORD_ENV, str(recording))
    task = load_task(FIXTURES / "tiny" / "task.yaml")
    script = FIXTURES / "orchestrator" / "repeated_change.yaml"
    solve(task, run_dir, RunConfig(sandbox="local"), model=f"scripted:{script}", steps=2)
    sent = [json.loads(p.read_text())["request"]["messages"] for p in recording.glob("*.json")]
    # the recording is unordered (files named by request hash): the second call extends the first
    implementation = sorted((m for m in sent if m[0]["content"].find("ROLE: implementation") >= 0), key=len)
    assert len(implementation) == 2 and implementation[1][-1] == {"role": "user", "content": CHANGED}
    events = [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]
    ends = [
        e["payload"] for e in events if e["kind"] == "specialist.end" and e["payload"]["specialist"] == "implementation"
    ]
    assert [e["ok"] for e in ends] == [True, False]
    assert ends[1]["summary"].startswith("not run: this is the change step 1 measured (quadratic/mse ")
    assert "LEARNING_RATE = 0.1\n" in (run_dir / "submission" / "config.py").read_text()  # not undone
    # the orchestrator's brief holds the run's facts once (the same in every request: cached); each status only
    # what changed, in a few lines (the full map and a counters line repeating FACTS were ~300 tokens a decision)
    decisions = [m for m in sent if m[0]["content"].find("ROLE: orchestrator") >= 0]
    assert len(decisions) == 4 and len({m[1]["content"] for m in decisions}) == 1
    assert read_facts(decisions[0][:2])["editable"] == ["submission/train.py", "submission/config.py"]
    status = [m[-1]["content"] for m in decisions]
    assert all(len(text) < 1600 and "editable" not in text and "| area |" not in text for text in status), status
    assert not [text for text in status if "tokens" in text or "cost" in text]  # unlimited: the counts say nothing
    assert sorted(read_facts(m)["steps_done"] for m in decisions) == [0, 0, 1, 1]  # the recording is unordered
    # right after the experiment (only then) the status says that running the code again repeats it
    repeat = [m for m in decisions if "another experiment now repeats it" in m[-1]["content"]]
    assert len(repeat) == 1 and read_facts(repeat[0])["steps_done"] == 1


def test_implementation_is_shown_the_plans_edits_that_apply_naming_the_file_that_holds_them(tmp_path: Path) -> None:
    """The 1.5B plan named train.py for config.py's EPOCHS; its implementer rewrote train.py whole. The plan's change
    lines that apply to the code as it is are shown as edit_file arguments, each naming the file holding its text."""
    ws = Workspace.create(load_task(FIXTURES / "tiny" / "task.yaml"), tmp_path / "run")
    ctx = RunContext(agent="aiscientist", ws=ws, model="offline", steps=3)
    assert planned_edits(ctx) == ""  # no plan yet
    lines = [
        '## P0. more epochs: a longer run converges\n- change: {"path": "submission/train.py", "old": "EPOCHS = 40",'
        ' "new": "EPOCHS = 80"}',
        '## P1. same: nothing\n- change: {"path": "submission/config.py", "old": "DEGREE = 2", "new": "DEGREE = 2"}',
        '## P2. gone\n- change: {"path": "submission/config.py", "old": "BATCH = 8", "new": "BATCH = 4"}',
        "## P3. not json\n- change: {path: config.py}",
        '## P4. lower rate\n- change: {"path": "submission/config.py", "old": "LEARNING_RATE = 0.05",'
        ' "new": "LEARNING_RATE = 0.1"}',
    ]
    ws.scope("prioritization").write("plan/prioritized_tasks.md", "\n".join(lines) + "\n")
    shown = planned_edits(ctx).splitlines()
    assert shown[0] == PLANNED and [json.loads(line) for line in shown[1:]] == [
        {"path": "submission/config.py", "old": "EPOCHS = 40", "new": "EPOCHS = 80"},
        {"path": "submission/config.py", "old": "LEARNING_RATE = 0.05", "new": "LEARNING_RATE = 0.1"},
    ]
    ctx.write_code("config.py", ctx.read_code("config.py").replace("EPOCHS = 40", "EPOCHS = 80"))
    assert [json.loads(line)["old"] for line in planned_edits(ctx).splitlines()[1:]] == ["LEARNING_RATE = 0.05"]


def test_implementation_is_shown_the_line_that_sets_the_old_value_its_task_names() -> None:
    """The 1.5B orchestrator asked for the epochs "in submission/train.py from 50 to 60"; EPOCHS was set in config.py
    and the implementer rewrote train.py whole. A number change the task names is shown on the one assignment of the
    old number to a name that shares a word with the task."""
    config = '"""Hyper-parameters."""\n\nLEARNING_RATE = 0.05\nEPOCHS = 50\nDEGREE = 2\n'
    code = {"train.py": "from config import EPOCHS\n\nfor _ in range(50):\n    x = 50\n", "config.py": config}

    def shown(task: str, files: dict[str, str] = code) -> list[dict[str, str]]:
        lines = asked_edits(task, files).splitlines()
        assert not lines or lines[0] == ASKED
        return [json.loads(line) for line in lines[1:]]

    assert shown("change the number of epochs in submission/train.py from 50 to 60") == [
        {"path": "submission/config.py", "old": "EPOCHS = 50", "new": "EPOCHS = 60"}
    ]
    assert shown("learning rate 0.05 -> 0.1, degree 2 to 3") == [
        {"path": "submission/config.py", "old": "LEARNING_RATE = 0.05", "new": "LEARNING_RATE = 0.1"},
        {"path": "submission/config.py", "old": "DEGREE = 2", "new": "DEGREE = 3"},
    ]
    typed = {"a.py": "    self.epochs: int = 50  # passes\n"}
    assert shown("epochs 50 → 70", typed) == [
        {"path": "submission/a.py", "old": "self.epochs: int = 50  # passes", "new": "self.epochs: int = 70  # passes"}
    ]
    assert shown("dropout from 0.05 to 0.3") == []  # no name of the task's words sets 0.05
    assert shown("epochs from 50 to 50.0") == [] and shown("more epochs") == []
    assert shown("epochs 50 to 60", {"a.py": "EPOCHS = 50\n", "b.py": "EPOCHS = 50\n"}) == []  # which one: not said
    assert shown("epochs 5 to 6", {"a.py": "EPOCHS = 50\n"}) == []  # 5 is not 50


def test_the_status_counts_tokens_and_cost_against_the_run_s_limits(tmp_path: Path) -> None:
    ws = Workspace.create(load_task(FIXTURES / "tiny" / "task.yaml"), tmp_path / "run")
    limited = RunContext(ws=ws, agent="aiscientist", model="offline", steps=3, config=RunConfig(max_tokens=5000))
    assert progress_line(limited) == "Steps used: 0/3 (3 left) · tokens 0 of 5000"
    both = RunConfig(max_tokens=5000, max_cost_usd=0.5)
    assert progress_line(RunContext(ws=ws, agent="aiscientist", model="offline", steps=3, config=both)).endswith(
        "· tokens 0 of 5000 · cost $0.0000 of $0.5"
    )
    assert progress_line(RunContext(ws=ws, agent="aiscientist", model="offline", steps=3)) == "Steps used: 0/3 (3 left)"


def test_a_change_after_a_worse_step_starts_from_the_best_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1.5B model's 1,200 s run built every change on the one before (the epochs fell to 2, the error rose)."""
    run_dir, recording = tmp_path / "run", tmp_path / "rec"
    monkeypatch.setenv(RECORD_ENV, str(recording))
    task = load_task(FIXTURES / "tiny" / "task.yaml")
    script = FIXTURES / "orchestrator" / "worse_then_best.yaml"
    solve(task, run_dir, RunConfig(sandbox="local"), model=f"scripted:{script}", steps=3)
    steps = [json.loads((run_dir / f"experiments/step_000{n}/step.json").read_text()) for n in (1, 2)]
    assert steps[1]["metric"] > steps[0]["metric"]  # step 2 was worse (lower is better)
    config = (run_dir / "submission" / "config.py").read_text()
    assert "LEARNING_RATE = 0.1\n" in config and "EPOCHS = 40\n" in config and "DEGREE = 3\n" in config
    events = [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]
    restored = [e["payload"] for e in events if e["kind"] == "code.restored"]
    assert restored == [{"after_step": 2, "to": "step 1"}]
    sent = [json.loads(p.read_text())["request"]["messages"] for p in recording.glob("*.json")]
    briefs = [m[1]["content"] for m in sent if "ROLE: implementation" in m[0]["content"] and len(m) == 2]
    told = [b for b in briefs if "The code is back to step 1's, the best so far (quadratic/mse " in b]
    assert len(briefs) == 3 and len(told) == 1 and "step 2 was no better (quadratic/mse " in told[0]
    assert "EPOCHS = 40" in told[0].split("## Files", 1)[1]  # the brief shows the code as restored


def test_a_change_that_leaves_python_that_does_not_compile_is_undone(tmp_path: Path) -> None:
    """The 1.5B model's indentation errors failed four steps of a 1,200 s run: such a change never reaches one."""
    run_dir = tmp_path / "run"
    task = load_task(FIXTURES / "tiny" / "task.yaml")
    script = FIXTURES / "orchestrator" / "broken_edit.yaml"
    solve(task, run_dir, RunConfig(sandbox="local"), model=f"scripted:{script}", steps=2)
    assert "\nEPOCHS = 40\n" in (run_dir / "submission" / "config.py").read_text()
    events = [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]
    ends = [e["payload"] for e in events if e["kind"] == "specialist.end"]
    assert not ends[0]["ok"] and ends[0]["summary"].startswith(
        "the change left submission/config.py not valid Python (line 4: unexpected indent): it is undone"
    )
    assert json.loads((run_dir / "experiments/step_0001/step.json").read_text())["success"]


def test_a_hypothesis_that_says_nothing_records_what_implementation_was_asked_and_did(tmp_path: Path) -> None:
    """The 1.5B orchestrator sent "ok" as the hypothesis of each of a 1,200 s run's 31 steps."""
    ws = Workspace.create(load_task(FIXTURES / "tiny" / "task.yaml"), tmp_path / "run", sandbox="local")
    ctx = RunContext(ws=ws, agent="aiscientist", model="offline", steps=3)
    assert stated(ctx, "ok") == "ok"  # no implementation yet: nothing to add
    for key, task, summary in (("d1.c0", "raise the epochs", "EPOCHS 40 -> 60"), ("d3.c0", "lower the rate", "0.01")):
        entry = f"[call {key}] mode: explore\ntask: {task}\nfiles changed: submission/config.py\n{summary}\nmore"
        append_once(ctx, ws.scope("implementation"), "impl_log", f"[call {key}]", entry)
    assert stated(ctx, " ok ") == (
        "ok; implementation's task: lower the rate; files changed: submission/config.py; its summary: 0.01"
    )
    assert stated(ctx, "").startswith("(none given); implementation's task: lower the rate;")
    assert stated(ctx, "a lower rate converges") == "a lower rate converges"  # said something: kept
