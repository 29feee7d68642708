"""Replay journal: effects already done in a decision that a resumed run restarts (a file
edit, a log entry, a specialist call, an experiment) are answered from the record, keyed
by their position (decision, call, turn, tool call). One `write` per line (no fsync: that
guards only against power loss); a torn last line is ignored.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any


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
