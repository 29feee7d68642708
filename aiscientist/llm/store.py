"""Record and replay of model calls, keyed by `request_hash(model, messages, tools)`.

Each key is one file `<hash>.json` holding the request and the list of replies given
to it, in order: a request asked twice (a real model may answer differently) is
replayed with the same sequence of answers.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from aiscientist.llm.messages import canonical_json
from aiscientist.llm.types import ReplayMiss, Reply
from aiscientist.records.paths import write_atomic


class Recorder:
    _lock = threading.Lock()  # shared: several clients of a run may record the same request

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def save(self, key: str, request: dict[str, Any], reply: Reply) -> None:
        with self._lock:
            path = self.dir / f"{key}.json"
            entry = json.loads(path.read_text()) if path.is_file() else {"request": request, "replies": []}
            entry["replies"].append(reply.model_dump())
            write_atomic(path, json.dumps(entry, indent=1, ensure_ascii=False))


class Replayer:
    def __init__(self, directory: Path):
        self.dir = Path(directory)
        if not self.dir.is_dir():
            raise ReplayMiss(f"replay directory {self.dir} does not exist")
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()

    def lookup(self, key: str, request: dict[str, Any]) -> Reply:
        path = self.dir / f"{key}.json"
        if not path.is_file():
            raise ReplayMiss(
                f"replay miss: no recorded response for request {key} in {self.dir}; {self._nearest(request)}"
            )
        replies = json.loads(path.read_text())["replies"]
        with self._lock:
            index = self._seen[key]
            self._seen[key] += 1
        if index >= len(replies):
            raise ReplayMiss(
                f"replay miss: request {key} was recorded {len(replies)} time(s), asked now for time {index + 1}"
            )
        return Reply.model_validate(replies[index])

    def _nearest(self, request: dict[str, Any]) -> str:
        """Where the request first departs from the closest recorded one."""
        best: tuple[tuple[int, int], str] | None = None
        for path in sorted(self.dir.glob("*.json")):
            try:
                recorded = json.loads(path.read_text())["request"]
            except (ValueError, KeyError):
                continue
            score, where = _first_difference(recorded, request)
            if best is None or score > best[0]:
                best = (score, f"closest recording {path.stem[:12]}: {where}")
        return best[1] if best else "the directory holds no recordings"


def _first_difference(recorded: dict[str, Any], request: dict[str, Any]) -> tuple[tuple[int, int], str]:
    """A similarity score (shared leading messages, then shared leading characters of
    the first differing one) and a description of the first difference."""
    if recorded.get("model") != request.get("model"):
        return (-1, 0), f"model differs ({recorded.get('model')} recorded, {request.get('model')} asked)"
    old, new = recorded.get("messages", []), request.get("messages", [])
    for i, (a, b) in enumerate(zip(old, new)):
        if canonical_json(a) != canonical_json(b):
            field = next((k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)), "?")
            was, now = _excerpts(str(a.get(field)), str(b.get(field)))
            shared = len(os.path.commonprefix([canonical_json(a), canonical_json(b)]))
            return (i, shared), f"message {i} ({b.get('role')}) differs in '{field}': recorded {was!r}, asked {now!r}"
    if len(old) != len(new):
        return (min(len(old), len(new)), 0), f"{len(new)} messages asked, {len(old)} recorded"
    if canonical_json(recorded.get("tools")) != canonical_json(request.get("tools")):
        return (len(new), 0), "the tool schemas differ"
    return (len(new), 0), "identical request body (hash scheme changed?)"


def _excerpts(a: str, b: str, width: int = 40) -> tuple[str, str]:
    """The two texts around their first differing character."""
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    start = max(0, at - width // 2)

    def cut(text: str) -> str:
        return ("..." if start else "") + text[start : at + width] + ("..." if len(text) > at + width else "")

    return cut(a), cut(b)
