"""A specialist's turn: a finish in the turn of a failed call is refused (what its conversation
sends again is tested with the memory rules, tests/agent/test_memory.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiscientist.agent.turn import NOT_FINISHED
from aiscientist.config import RunConfig
from aiscientist.llm.config import RECORD_ENV
from aiscientist.orchestrator import solve
from aiscientist.task import load_task

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
    assert (end["summary"], end["turns"]) == ("evaluate.py is protected: nothing changed", 2)
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
