"""What a specialist's conversation sends again: old tool results shrink once the agent
has acted on them, and a finish in the turn of a failed call is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiscientist.agent.loop import NOT_FINISHED
from aiscientist.config import RunConfig
from aiscientist.llm.config import RECORD_ENV
from aiscientist.orchestrator import solve
from aiscientist.specialists.base import ACTED_KEEP_CHARS, ACTED_MARK, settled
from aiscientist.task import load_task

FIXTURES = Path(__file__).parents[1] / "fixtures"
EFFECTS = {"edit_file", "write_file"}


def _turn(i: int, name: str, result: str) -> list[dict]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": result},
    ]


def test_results_before_the_latest_change_shrink_and_the_rest_stay_whole() -> None:
    plan, code, edited, more = "plan " * 200, "code " * 200, "edited a.py", "more " * 200
    head = [{"role": "system", "content": "ROLE: implementation"}, {"role": "user", "content": "task " * 200}]
    reading = head + _turn(0, "read_file", plan) + _turn(1, "read_file", code)
    assert settled(reading, EFFECTS.__contains__) == reading  # nothing acted on yet
    acted = reading + _turn(2, "edit_file", edited) + _turn(3, "read_file", more)
    sent = settled(acted, EFFECTS.__contains__)
    assert [m.get("content") for m in sent if m["role"] == "tool"] == [
        plan[:ACTED_KEEP_CHARS] + ACTED_MARK,
        code[:ACTED_KEEP_CHARS] + ACTED_MARK,
        edited,
        more,
    ]
    assert [m for m in sent if m["role"] != "tool"] == [
        m for m in acted if m["role"] != "tool"
    ]  # instructions and the agent's own messages whole
    assert acted[3]["content"] == plan  # the loop's own conversation is not changed


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
