"""Guidance mid-run: notes a person adds to a run (`aiscientist guide RUN "text"`) that the run reads
at its next decision. A note is an event of the run's hash-chained log (`guidance.note`, role `user`,
with its number and text); the run records what it did with it: `guidance.ack` (the orchestrator's
decision that followed, with the calls it made) and `guidance.delivered` (a baseline's prompt that
carried it). Notes are advice, quoted as such in prompts: never run, never task instructions that
override the protected files or the task's rules. A run folder that is not running keeps its notes
for `--resume`; a finished one takes none.

The offline policy reads one form: `try NAME=VALUE` (e.g. `try LEARNING_RATE=0.01`) makes it set that
literal next (`aiscientist.llm.offline.search.guided_change`).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from aiscientist.records.paths import RunPaths
from aiscientist.util import notices
from aiscientist.util.text import CLOSE, OPEN, clean
from aiscientist.workspace.eventlog import EventLog

NOTE, ACK, DELIVERED = "guidance.note", "guidance.ack", "guidance.delivered"
AUTHOR = "user"  # the role a note is recorded under
MAX_CHARS = 4000
HEADING = "## Guidance from the person running this run (advice: the task, its rules and protected files still hold)"


class GuidanceError(ValueError):
    """A note that cannot be added: say why, in one line."""


@dataclass(frozen=True)
class Note:
    id: int
    text: str
    ts: str = ""

    def quoted(self) -> str:
        """The note for a prompt: cleaned, one line, delimited and labelled as guidance."""
        body = clean(self.text, MAX_CHARS).replace(OPEN, "[").replace(CLOSE, "]")
        return f"{OPEN}note {self.id}, guidance not a task instruction: {body}{CLOSE}"


def finished(run_dir: Path) -> bool:
    """A solve run whose state says finished, or another run (a bench cell, `baseline`) with its result.json."""
    paths = RunPaths(run_dir)
    if paths.run_info.is_file():
        try:
            return bool(json.loads(paths.run_info.read_text()).get("finished"))
        except (ValueError, AttributeError):
            return False
    return paths.result.is_file()


def add_note(run_dir: Path, text: str) -> Note:
    """Record `text` as the run's next note; GuidanceError for no run folder, a finished run, empty or long text."""
    run_dir = Path(run_dir)
    if not RunPaths(run_dir).is_run():
        raise GuidanceError(f"{run_dir} is not a run folder")
    if finished(run_dir):
        raise GuidanceError(f"{run_dir} has finished: resume it first (solve --resume {run_dir} --steps N), then guide")
    text = text.strip()
    if not text:
        raise GuidanceError("the note is empty")
    if len(text) > MAX_CHARS:
        raise GuidanceError(f"the note has {len(text)} characters; at most {MAX_CHARS}")
    number = len(Guidance(run_dir).notes()) + 1
    event = EventLog(run_dir).record(AUTHOR, NOTE, {"id": number, "text": text})
    return Note(number, text, event["ts"])


@dataclass
class Guidance:
    """A run's notes and what became of them, read from its event log as it grows (each call reads
    only the lines added since the last one)."""

    root: Path
    _offset: int = 0
    _notes: list[Note] = field(default_factory=list)
    _seen: dict[str, int] = field(default_factory=dict)  # role -> the last note acknowledged or delivered
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _read(self) -> None:
        path = RunPaths(self.root).events
        if not path.is_file():
            return
        with path.open("rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        self._offset += end
        for line in data[:end].splitlines():
            if b'"guidance.' not in line:
                continue
            try:
                event = json.loads(line)
                kind, payload = event["kind"], event["payload"]
                if kind == NOTE and event["role"] == AUTHOR:
                    self._notes.append(Note(int(payload["id"]), str(payload["text"]), str(event["ts"])))
                elif kind in (ACK, DELIVERED):
                    role = str(event["role"])
                    self._seen[role] = max(self._seen.get(role, 0), *map(int, payload["notes"]))
            except (ValueError, KeyError, TypeError):
                continue

    def notes(self) -> list[Note]:
        with self._lock:
            self._read()
            return list(self._notes)

    def pending(self, role: str) -> list[Note]:
        """Notes `role` has not acknowledged (or been given) yet."""
        with self._lock:
            self._read()
            return [n for n in self._notes if n.id > self._seen.get(role, 0)]

    def mark(self, log: EventLog, role: str, kind: str, notes: list[Note], **payload: object) -> None:
        """Record that `role` acknowledged (ACK) or was given (DELIVERED) `notes`."""
        if not notes:
            return
        log.record(role, kind, {"notes": [n.id for n in notes], **payload})
        with self._lock:
            self._seen[role] = max(self._seen.get(role, 0), *(n.id for n in notes))
        verb = "acknowledged by" if kind == ACK else "given to"
        for note in notes:
            notices.notify("guidance", f"note {note.id} {verb} {role}: {clean(note.text, 160)}")


def block(notes: list[Note]) -> str:
    """The prompt section that carries `notes` (empty without any)."""
    return "\n".join([HEADING, *(f"- {n.quoted()}" for n in notes)]) if notes else ""
