"""Replay journal: effects already done in a decision that a resumed run restarts (a file
edit, a log entry, a specialist call, an experiment) are answered from the record, keyed
by their position (decision, call, turn, tool call); `journaled_call` is how every agent on the
kernel runs a tool call so. One `write` per line (no fsync: that guards only against power
loss); a torn last line is ignored.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiscientist.agent.tools import Toolbox
    from aiscientist.llm.types import ToolCall


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._done: dict[str, Any] = {}
        self._intents: dict[str, Any] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                target = self._done if entry.get("kind") == "done" else self._intents
                target[entry["key"]] = entry.get("value")

    def get(self, key: str) -> Any | None:
        """None when `key` never finished."""
        return self._done.get(key)

    def intent(self, key: str) -> Any | None:
        """What was noted before `key` started (e.g. its step number)."""
        return self._intents.get(key)

    def note_intent(self, key: str, value: Any) -> None:
        self._append("intent", key, value)
        self._intents[key] = value

    def record(self, key: str, value: Any) -> None:
        self._append("done", key, value)
        self._done[key] = value

    def _append(self, kind: str, key: str, value: Any) -> None:
        line = (json.dumps({"kind": kind, "key": key, "value": value}, default=str) + "\n").encode()
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab", buffering=0) as handle:  # unbuffered: one write() per line
                handle.write(line)


def journaled_call(journal: Journal, logs: Path, box: Toolbox, call: ToolCall, key: str) -> str:
    """`call`'s result; an effect already done before a resume is answered from `journal`, and
    one done is journaled at `key` (the call's position: decision, call, turn, tool call); `logs`
    is the run's logs folder (an append_log that landed before an interruption is not redone)."""
    if not box.is_effect(call.name):
        box.current_key = key
        return box.call(call)[0]
    recorded = journal.get(key)
    if recorded is not None and recorded.get("tool") == call.name:
        for artifact in recorded.get("artifacts") or []:
            box.note(artifact)
        return str(recorded["content"])
    before = set(box.artifacts)
    if journal.intent(key) is not None and _append_landed(logs, call):
        content, ok = f"appended to {call.arguments['log']} (before an interruption)", True
    else:
        journal.note_intent(key, call.name)
        box.current_key = key
        content, ok = box.call(call)
    added = [a for a in box.artifacts if a not in before]
    journal.record(key, {"tool": call.name, "content": content, "ok": ok, "artifacts": added})
    return content


def _append_landed(logs: Path, call: ToolCall) -> bool:
    """An append_log done but not journaled before an interruption (a repeated write or edit is harmless)."""
    if call.name != "append_log" or call.error:
        return False
    path = logs / f"{call.arguments.get('log')}.md"
    text = str(call.arguments.get("text", "")).strip()
    return bool(text) and path.is_file() and text in path.read_text(errors="replace")[-len(text) - 200 :]
