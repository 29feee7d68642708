"""Replay journal for workspace effects, so a resumed run neither loses nor repeats work.

The graph checkpoint restarts an interrupted decision from its beginning. Effects
already done in that decision (a file edit, a log entry, a whole specialist call, an
experiment) are looked up here by a key that names their position in the run
(decision, call, turn, tool call) and answered from the record instead of being
done twice. Lines are appended with one `write` each (a killed process cannot lose
what the kernel already has; no fsync, which would only guard against power loss and
costs milliseconds per effect); a torn last line is ignored.
"""

from __future__ import annotations

import json
import os
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
        """The recorded result of `key`, or None when it never finished."""
        return self._done.get(key)

    def intent(self, key: str) -> Any | None:
        """What was noted before `key` started (e.g. the step number it would use)."""
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
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
