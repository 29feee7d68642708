"""Guidance mid-run: `guide RUN "text"` reaches a running offline solve at its next decision, which
tries the change it names; the note is an event, on the console and on run.html; bad input is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.config import load_config
from aiscientist.orchestrator import solve
from aiscientist.records.paths import RunPaths
from aiscientist.task import load_task
from aiscientist.viewer import write_page
from aiscientist.workspace import verify_run
from aiscientist.workspace.guidance import MAX_CHARS, GuidanceError, add_note

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"
NOTE = "try EPOCHS=7 (the loss plateaus early)"


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "aiscientist", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in RunPaths(run_dir).events.read_text().splitlines()]


def _epochs(run_dir: Path, step: int) -> str:
    return (RunPaths(run_dir).step_code(step) / "config.py").read_text()


def test_a_note_changes_the_running_orchestrators_next_decision(tmp_path):
    run_dir = tmp_path / "run"
    added = []

    def progress(shown: dict) -> None:  # the run is going on: a person adds a note after step 1
        if shown["steps_done"] == 1 and not added:
            added.append(add_note(run_dir, NOTE))

    config = load_config([], ["sandbox=local"])
    solve(load_task(TINY), run_dir, config, model="offline", steps=4, progress=progress)
    events = _events(run_dir)
    kinds = [e["kind"] for e in events]
    note = events[kinds.index("guidance.note")]
    assert note["role"] == "user" and note["payload"] == {"id": 1, "text": NOTE}
    ack = events[kinds.index("guidance.ack")]
    assert (
        ack["role"] == "orchestrator" and ack["payload"]["notes"] == [1] and "implementation" in ack["payload"]["tools"]
    )
    assert kinds.count("guidance.ack") == 1  # acknowledged once: later prompts no longer carry it
    # that decision measured the change before and had the note's change made: the next step measures it
    later = [e["payload"]["step"] for e in events[kinds.index("guidance.ack") :] if e["kind"] == "experiment.end"]
    assert len(later) == 2, kinds
    assert "EPOCHS = 7" in _epochs(run_dir, later[1]) and "EPOCHS = 7" not in _epochs(run_dir, later[0])
    assert verify_run(run_dir).clean
    page = write_page(run_dir).read_text()
    assert "guidance note 1: try EPOCHS=7" in page and "acknowledged note(s) [1]" in page


def test_guide_cli_keeps_a_note_for_resume_and_shows_it_on_the_console(tmp_path):
    run_dir = tmp_path / "run"
    assert _cli("solve", str(TINY), "--model", "offline", "--steps", "2", "--run-dir", str(run_dir)).returncode == 0
    finished = _cli("guide", str(run_dir), NOTE)
    assert finished.returncode == 2 and "has finished: resume it first" in finished.stderr
    info = RunPaths(run_dir).run_info  # as a run stopped before its end leaves it
    info.write_text(json.dumps({**json.loads(info.read_text()), "finished": False}))
    note_file = tmp_path / "note.txt"
    note_file.write_text(NOTE + "\n")
    added = _cli("guide", str(run_dir), "--file", str(note_file))
    assert added.returncode == 0 and "note 1 added" in added.stdout
    resumed = _cli("solve", "--resume", str(run_dir), "--steps", "4")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "note 1 acknowledged by orchestrator: try EPOCHS=7" in resumed.stdout
    assert "EPOCHS = 7" in _epochs(run_dir, 3)


@pytest.mark.parametrize(
    ("text", "problem"), [("  \n", "the note is empty"), ("x" * (MAX_CHARS + 1), f"at most {MAX_CHARS}")]
)
def test_bad_notes_are_refused(tmp_path, text, problem):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "logs").mkdir()
    with pytest.raises(GuidanceError, match=problem):
        add_note(tmp_path, text)


def test_guide_cli_errors(tmp_path):
    missing = _cli("guide", str(tmp_path / "nothing"), "hello")
    assert missing.returncode == 2 and "not a run folder" in missing.stderr
    both = _cli("guide", str(tmp_path), "hello", "--file", str(tmp_path / "x"))
    assert both.returncode == 2 and "one of them" in both.stderr


def test_a_baselines_next_prompt_carries_a_note_once(tmp_path):
    from aiscientist.agent.context import RunContext
    from aiscientist.workspace import Workspace

    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    ctx = RunContext(ws=ws, agent="react", model="offline", steps=2)
    add_note(ws.paths.root, NOTE)
    messages = [{"role": "system", "content": "You are a baseline."}, {"role": "user", "content": "Go."}]
    ctx.complete("react", messages)
    ctx.complete("react", messages)
    delivered = [e for e in _events(ws.paths.root) if e["kind"] == "guidance.delivered"]
    assert [(e["role"], e["payload"]["notes"]) for e in delivered] == [("react", [1])]
    assert len(RunPaths(ws.paths.root).llm_calls.read_text().splitlines()) == 2
