"""Append-only, hash-chained logs: `logs/events.jsonl` and the markdown logs.

Every event line holds seq, ts, role, kind, payload, prev_hash and hash, where
hash = sha256 over the canonical JSON of the other six fields and prev_hash is
the previous line's hash. Markdown logs are appended in `=== Session N ===`
blocks; each append is itself an event recording the byte offset, length,
sha256 and one short hash per line of the appended text, so `verify` can name
the first line of a markdown log that no longer matches, and a mirror copy of
each markdown log under `.pristine/logs/` lets the watcher restore it.

Writers serialise on a thread lock and an exclusive `flock` of events.jsonl
(across processes; `LockedAppendFile`, which keeps the file open) and write each
line with a single O_APPEND write. `state/events_head.json` keeps the last seq,
hash and the expected log sizes, so truncation at a line boundary is caught.

The chain is plain sha256, not keyed: it proves that nothing was changed by
anyone who did not also rewrite every later line and the head (agents and
experiment scripts, which reach the folder only through the API or a sandbox
that does not mount logs/ writable). It is not a defence against someone
with full write access who knows the scheme.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiscientist.records.paths import EVENTS_HEAD, EVENTS_LOG, PRISTINE_LOGS
from aiscientist.util import untrusted
from aiscientist.util.appendfile import LockedAppendFile
from aiscientist.util.interrupts import deferred_interrupts

GENESIS = "0" * 64
HEAD_PAD = 512
MAX_LOG_BYTES = 256 << 20  # a markdown log read whole to complete an append a killed writer left unrecorded
SESSION_MARK = "=== Session "
_NOT_A_SESSION = re.compile("^" + re.escape(SESSION_MARK), re.M)
LINE_HASH_CHARS = 12
FIELDS = ("seq", "ts", "role", "kind", "payload", "prev_hash")


_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical(obj: Any) -> bytes:
    """Sorted, compact UTF-8 JSON. Text without lone surrogates keeps the bytes
    it always had. A lone surrogate (a model may send one; UTF-8 cannot encode
    it) is replaced, before sorting, by the six characters of its escape, e.g.
    `\\udc80`: the written line parses back to text with the same canonical
    bytes, so the chain still verifies."""
    try:
        return _dumps(obj).encode()
    except UnicodeEncodeError:
        return _dumps(_without_surrogates(obj), lambda value: _escape_surrogates(str(value))).encode()


def _dumps(obj: Any, default: Any = str) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default)


def _escape_surrogates(text: str) -> str:
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _without_surrogates(obj: Any) -> Any:
    if isinstance(obj, str):
        return _escape_surrogates(obj)
    if isinstance(obj, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_without_surrogates(v) for v in obj]
    return obj


def event_hash(event: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({k: event[k] for k in FIELDS})).hexdigest()


def line_hashes(data: bytes) -> list[str]:
    return [hashlib.sha256(line).hexdigest()[:LINE_HASH_CHARS] for line in data.splitlines(keepends=True)]


def _open_for_writing(path: Path) -> int:
    """A descriptor to write `path` in place; its folder is made only when missing
    (a mkdir at every write would cost a system call per event)."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class EventLog:
    """The run's event chain; `root` is the run folder."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.path = self.root / EVENTS_LOG
        self.head_path = self.root / EVENTS_HEAD
        self._sessions: dict[Path, tuple[int, int]] = {}  # log -> (bytes counted, sessions in them)
        self._head: dict[str, Any] = {}  # the head this object last wrote: valid while the log keeps its size
        self._file = LockedAppendFile(self.path)

    def record(self, role: str, kind: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        """Append one event and return it."""
        with self._locked() as fd:
            return self._append_event(fd, role, kind, payload or {})

    def append_text(self, role: str, rel: str, text: str, session: int | None) -> tuple[dict[str, Any], int]:
        """Append `text` to the markdown log `rel` (run-relative), opening a new
        `=== Session N ===` block when `session` is None. Returns the event and
        the session number the text went into."""
        target = self.root / rel
        with self._locked() as fd, deferred_interrupts():  # Ctrl-C between the text and its event waits
            out = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                offset = os.fstat(out).st_size
                header = ""
                if session is None:
                    session = self._count_sessions(target, offset) + 1
                    header = ("\n" if offset else "") + f"{SESSION_MARK}{session} === ({role}, {now()})\n"
                text = _NOT_A_SESSION.sub(" " + SESSION_MARK, text)  # only the API opens sessions
                data = (header + text + ("" if text.endswith("\n") else "\n")).encode()
                self._mirror(rel, offset, data)  # first: a kill after the log's write leaves text it holds
                os.write(out, data)
            finally:
                os.close(out)
            payload = _append_payload(rel, session, offset, data)
            event = self._append_event(fd, role, "log.append", payload, log_size=(rel, offset + len(data)))
        return event, session

    def complete_appends(self, logs: list[str]) -> list[str]:
        """Record the appends to `logs` (run-relative) that a killed writer wrote but never recorded; the
        logs completed. The mirror is written before the log and only by this API (no role reaches it), so
        a log that the mirror holds byte for byte, longer than its last recorded append ends, had its tail
        written here: it is recorded now (`recovered`). Any other tail is left for `verify` and the watcher
        to report as text written outside the API."""
        completed = []
        with self._locked() as fd:
            ends = _recorded_ends(self.path)
            for rel in logs:
                data = _log_bytes(self.root, rel)
                mirror = _log_bytes(self.root, str(self.mirror_path(rel).relative_to(self.root)))
                end = ends.get(rel, 0)
                if data is None or mirror is None or len(data) <= end or mirror[: len(data)] != data:
                    continue
                session = sum(line.startswith(SESSION_MARK.encode()) for line in data.splitlines())
                payload = {**_append_payload(rel, session, end, data[end:]), "recovered": True}
                self._append_event(fd, "system", "log.append", payload, log_size=(rel, len(data)))
                completed.append(rel)
        return completed

    def _count_sessions(self, path: Path, size: int) -> int:
        """Sessions opened in the log's first `size` bytes, read from where the last count
        stopped (a log only grows, under the lock; a shorter one is counted afresh)."""
        counted, count = self._sessions.get(path, (0, 0))
        if counted > size:
            counted, count = 0, 0
        with open(path, "rb") as handle:
            handle.seek(counted)
            for line in handle.read(size - counted).splitlines():
                count += line.startswith(SESSION_MARK.encode())
        self._sessions[path] = (size, count)
        return count

    def mirror_path(self, rel: str) -> Path:
        """A copy of a markdown log kept where no role reaches, for restoring it."""
        return self.root / PRISTINE_LOGS / Path(rel).name

    def _mirror(self, rel: str, offset: int, data: bytes) -> None:
        fd = _open_for_writing(self.mirror_path(rel))
        try:
            os.pwrite(fd, data, offset)
            os.ftruncate(fd, offset + len(data))
        finally:
            os.close(fd)

    def head(self) -> dict[str, Any]:
        """The last recorded seq, hash and expected log sizes (read under the lock)."""
        with self._locked(shared=True):
            return self._read_head()

    def _locked(self, shared: bool = False) -> AbstractContextManager[int]:
        return self._file.locked(shared)

    def _append_event(
        self, fd: int, role: str, kind: str, payload: dict[str, Any], log_size: tuple[str, int] | None = None
    ) -> dict[str, Any]:
        size = os.fstat(fd).st_size
        # nobody else wrote since this object's last append: the head it wrote still holds
        head = self._head if self._head.get("size") == size else self._read_head()
        torn = _torn_tail(fd, size)
        if torn:  # a writer died mid-line: drop the partial line, say so below
            size -= len(torn)
            os.ftruncate(fd, size)
        seq, prev = head.get("seq", 0), head.get("hash", GENESIS)
        if head.get("size") != size:  # head missing or stale: trust the file's last line
            seq, prev = _last_event(fd, size) or (seq, prev)
        event = {
            "seq": seq + 1,
            "ts": now(),
            "role": role,
            "kind": kind,
            "payload": json.loads(canonical(payload)),
            "prev_hash": prev,
        }
        event["hash"] = event_hash(event)
        line = canonical(event) + b"\n"
        os.write(fd, line)
        logs = dict(head.get("logs", {}))
        if log_size is not None:
            logs[log_size[0]] = log_size[1]
        self._head = {"seq": event["seq"], "hash": event["hash"], "size": size + len(line), "logs": logs}
        self._write_head(self._head)
        if torn:
            note = {"file": EVENTS_LOG, "dropped_bytes": len(torn), "preview": torn[:200].decode(errors="replace")}
            self._append_event(fd, "system", "log.repaired", note)
        return event

    def _read_head(self) -> dict[str, Any]:
        try:
            return json.loads(self.head_path.read_text())
        except (OSError, ValueError):
            return {}

    def _write_head(self, head: dict[str, Any]) -> None:
        """Overwrite in place, padded with spaces to at least the old length:
        truncating first makes ext4 flush the file on close (100x slower)."""
        fd = _open_for_writing(self.head_path)
        try:
            data = canonical(head)
            os.pwrite(fd, data.ljust(max(HEAD_PAD, os.fstat(fd).st_size)), 0)
        finally:
            os.close(fd)


def _append_payload(rel: str, session: int, offset: int, data: bytes) -> dict[str, Any]:
    """A `log.append` event's payload: where `data` went in log `rel` and a hash of it and of each line."""
    return {
        "file": rel,
        "session": session,
        "offset": offset,
        "length": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "lines": line_hashes(data),
    }


def _recorded_ends(path: Path) -> dict[str, int]:
    """Each markdown log's end as the chain records it: its last `log.append`'s offset + length."""
    ends: dict[str, int] = {}
    with open(path, "rb") as handle:
        for raw in handle:
            if b'"log.append"' not in raw:
                continue
            try:
                event = json.loads(raw)
                if event["kind"] == "log.append":
                    ends[str(event["payload"]["file"])] = int(event["payload"]["offset"]) + int(
                        event["payload"]["length"]
                    )
            except (ValueError, KeyError, TypeError):
                continue
    return ends


def _log_bytes(root: Path, rel: str) -> bytes | None:
    try:
        return untrusted.read_file(root, rel, MAX_LOG_BYTES)
    except (untrusted.Unreadable, OSError):
        return None


def _last_event(fd: int, size: int) -> tuple[int, str] | None:
    """(seq, hash) of the file's last complete line, if it parses."""
    if size == 0:
        return None
    chunk, start = b"", size
    while start > 0 and chunk.count(b"\n") < 2:
        start = max(0, start - 65536)
        chunk = os.pread(fd, size - start, start)
    lines = chunk.rstrip(b"\n").split(b"\n")
    try:
        last = json.loads(lines[-1])
        return int(last["seq"]), str(last["hash"])
    except (ValueError, KeyError, TypeError):
        return None


def _torn_tail(fd: int, size: int) -> bytes:
    """The bytes after the file's last newline (empty when it ends cleanly)."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return b""
    start = size
    while start > 0:
        start = max(0, start - 65536)
        chunk = os.pread(fd, size - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return chunk[cut + 1 :]
    return os.pread(fd, size, 0)


def read_events(root: Path) -> Iterator[dict[str, Any]]:
    """The events of a run folder that parse (verification lives in verify.py)."""
    path = Path(root) / EVENTS_LOG
    if not path.is_file():
        return
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                yield json.loads(raw)
            except ValueError:
                continue
