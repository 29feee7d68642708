"""A watch over the run folder while a run is active.

The observer runs in a process of its own (`aiscientist.workspace.fswatch`). Every file
change it reports is queued with its time and the role or experiment active when it
happened, and written to the event log in batches (`files.changed`). Two kinds of change
are checked on the spot:

- protected files in submission/: hashed as soon as the change arrives. Outside
  a step they are restored from the pristine copy at once (unless the task's own
  commands are running, e.g. preprocessing; the engine restores after those);
  during a step the engine restores them after the run, and the watcher marks
  that step invalid, which also catches a script that edits a protected file
  and puts it back before the engine looks.
- logs: the markdown logs are compared with the line hashes in the event chain
  and put back from their mirror copy when they differ; events.jsonl is
  compared with the chain head and lines added outside the API are cut off.
  Whatever cannot be repaired is flagged, and `verify` reports it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from typing import Any, Protocol

from aiscientist.experiment.engine import ExperimentEngine
from aiscientist.records.paths import (
    EVENTS_LOG,
    LLM_CALLS_LOG,
    MAP_FILE,
    PAGE,
    PRISTINE,
    PRISTINE_LOGS,
    STATE,
    SUBMISSION,
    RunPaths,
)
from aiscientist.workspace.eventlog import EventLog, line_hashes
from aiscientist.workspace.fswatch import EVERY_WRITE_IN, FileChange, ObserverProcess, WatchSpec, intact
from aiscientist.workspace.permissions import PermissionsFile

log = logging.getLogger(__name__)

# Written all the time by the system itself (checkpoints, git, the map, the
# model client's call log, the log mirrors, the run page); not listed as changes.
IGNORED = (STATE + "/", MAP_FILE, PAGE, LLM_CALLS_LOG, PRISTINE_LOGS + "/")
# Not watched at all: every checkpoint, git commit and event-head write lands here.
UNWATCHED = (STATE,)
MAX_LISTED = 100


class WatchedWorkspace(Protocol):
    paths: RunPaths
    events: EventLog
    permissions: PermissionsFile
    engine: ExperimentEngine
    experiment_running: int | None
    watcher: Any

    def activity_at(self, at: float) -> tuple[str, int | None, bool]: ...


class Watcher:
    def __init__(self, ws: WatchedWorkspace, flush_s: float = 0.5):
        self.ws, self.flush_s = ws, flush_s
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._changes: dict[str, dict[str, Any]] = {}
        self._protected_hits: list[dict[str, Any]] = []
        self._dirty_logs: set[str] = set()
        self._pending_invalid: dict[int, set[str]] = {}
        self._pristine_touched = False
        self._manifest = ws.engine.protected_manifest()
        self._log_files = set(ws.permissions.logs.values())
        self._expected: dict[str, list[str]] = {}
        self._verified: dict[str, tuple[bytes, int]] = {}  # log -> (its content, its line count) last found intact
        self._events_offset = 0
        self._stop = threading.Event()
        self._observer: ObserverProcess | None = None
        self._thread = threading.Thread(target=self._loop, name="workspace-watcher", daemon=True)

    def __enter__(self) -> Watcher:
        for rel in self.ws.events.complete_appends(sorted(self._log_files)):
            log.info("completed the last append to %s, left unrecorded by a killed writer", rel)
        observer = ObserverProcess(
            WatchSpec(os.path.realpath(self.ws.paths.root), UNWATCHED, IGNORED, self._manifest),
            self._receive,
            self._lost,
        )
        try:
            observer.start()
        except OSError as err:  # e.g. inotify limits reached: the engine's own checks still hold
            log.warning("workspace watcher unavailable: %s", err)
            self.ws.events.record("system", "watcher.unavailable", {"error": str(err)})
            return self
        self._observer = observer
        self._thread.start()
        self.ws.watcher = self
        self.ws.events.record("system", "watcher.start", {"flush_s": self.flush_s})
        return self

    def __exit__(self, *exc: object) -> None:
        if self._observer is None:
            return
        self._observer.stop()
        self._stop.set()
        self._thread.join()
        self.flush()
        self.ws.watcher = None
        self.ws.events.record("system", "watcher.stop", {})

    def _loop(self) -> None:
        while not self._stop.wait(self.flush_s):
            try:
                self.flush()
            except Exception:  # the watcher must never take a run down
                log.exception("workspace watcher flush failed")

    def _receive(self, changes: list[FileChange]) -> None:
        """Queue a batch from the observer, each change attributed to whoever was
        active when it happened."""
        try:
            for change in changes:
                self._queue(change)
        except Exception:  # the watcher must never take a run down
            log.exception("workspace watcher could not queue changes")

    def _queue(self, change: FileChange) -> None:
        who, step, commands = self.ws.activity_at(change.at)
        rel = change.rel
        if change.intact is False:  # hashed by the observer when the change arrived
            hit = {
                "file": rel.removeprefix(SUBMISSION + "/"),
                "ts": change.ts,
                "by": who,
                "step": step,
                "commands": commands,
            }
            with self._lock:
                self._protected_hits.append(hit)
        if change.kind == "closed":
            if rel.startswith(EVERY_WRITE_IN + "/"):  # its writes were seen already
                return
            change = change._replace(kind="modified")  # elsewhere a close is how a write shows
        with self._lock:
            if rel in self._log_files or rel == EVENTS_LOG:
                self._dirty_logs.add(rel)
                return
            entry = self._changes.setdefault(
                rel, {"path": rel, "change": change.kind, "ts": change.ts, "by": who, "count": 0}
            )
            entry.update(change=change.kind, by=who, count=entry["count"] + 1)
            self._pristine_touched |= rel.startswith(PRISTINE + "/")

    def flush(self) -> None:
        """Handle everything queued so far."""
        with self._flush_lock:
            with self._lock:
                changes, self._changes = list(self._changes.values()), {}
                hits, self._protected_hits = self._protected_hits, []
                dirty, self._dirty_logs = self._dirty_logs, set()
                pristine, self._pristine_touched = self._pristine_touched, False
            if pristine:
                self._check_pristine()
            if hits:
                self._handle_protected(hits)
            self._invalidate_finished_steps()
            for rel in sorted(dirty):
                self._handle_log(rel)
            if changes:
                payload: dict[str, Any] = {"changes": changes[:MAX_LISTED]}
                if len(changes) > MAX_LISTED:
                    payload["more"] = len(changes) - MAX_LISTED
                self.ws.events.record("system", "files.changed", payload)

    def _handle_protected(self, hits: list[dict[str, Any]]) -> None:
        running = self.ws.experiment_running
        by_step: dict[int | None, list[dict[str, Any]]] = {}
        for hit in hits:
            by_step.setdefault(hit["step"], []).append(hit)
        others = by_step.pop(None, [])
        for step, step_hits in by_step.items():
            files = sorted({h["file"] for h in step_hits})
            self.ws.events.record(
                "system",
                "protected.tampered",
                {
                    "files": files,
                    "found": "watcher",
                    "step": step,
                    "by": step_hits[0]["by"],
                    "seen_at": step_hits[0]["ts"],
                    "restored": False,
                    "note": "the engine restores protected files after each step; the step is marked invalid",
                },
            )
            self._pending_invalid.setdefault(step, set()).update(files)
        if not others:
            return
        files = sorted({h["file"] for h in others})
        if all(h["commands"] for h in others):  # the task's own preprocessing may rewrite them
            self.ws.events.record(
                "system",
                "protected.changed",
                {
                    "files": files,
                    "found": "watcher",
                    "by": "task commands before the step",
                    "note": "the engine restores protected files before each step",
                },
            )
            return
        self.ws.events.record(
            "system",
            "protected.tampered",
            {
                "files": files,
                "found": "watcher",
                "by": others[0]["by"],
                "seen_at": others[0]["ts"],
                "restored": running is None,
            },
        )
        if running is None:
            self.ws.engine.restore_protected()

    def _lost(self, folder: str, why: str) -> None:
        """A folder the observer stopped watching (a tree too deep to follow): recorded, and the
        engine's own checks (after every command, experiment/checked.py) still hold."""
        log.warning("workspace watcher no longer watches %s: %s", folder, why)
        self.ws.events.record("system", "watcher.unwatched", {"folder": folder, "error": why})

    def _check_pristine(self) -> None:
        """Pristine copies cannot be restored from anywhere: flag them for verify."""
        copies = self.ws.paths.pristine_files
        bad = [inside for inside, digest in self._manifest.items() if not intact(str(copies), inside, digest)]
        if bad:
            self.ws.events.record(
                "system",
                "pristine.tampered",
                {"files": bad, "found": "watcher", "by": self.ws.activity(), "restored": False},
            )

    def _invalidate_finished_steps(self) -> None:
        """Mark a step invalid even when the file was put back before it ended
        (the engine, checking only after the run, would not see it)."""
        for step, files in list(self._pending_invalid.items()):
            step_json = self.ws.paths.step_record(step)
            if not step_json.is_file():  # still running
                continue
            del self._pending_invalid[step]
            record = json.loads(step_json.read_text())
            if record.get("valid", True):
                record.update(
                    valid=False,
                    success=False,
                    error="tampering: protected file(s) changed during the run (seen by the watcher): "
                    f"{', '.join(sorted(files))}",
                )
                text = json.dumps(record, indent=1)
                step_json.write_text(text)
                digest = hashlib.sha256(text.encode()).hexdigest()
                self.ws.events.record(
                    "system",
                    "step.invalidated",
                    {"step": step, "files": sorted(files), "found": "watcher", "record_sha256": digest},
                )

    def _handle_log(self, rel: str) -> None:
        with self.ws.events._locked():  # consistent with API appends; no recording inside
            finding = self._check_events() if rel == EVENTS_LOG else self._check_markdown(rel)
        if finding:
            self.ws.events.record(
                "system", "log.tampered", {"file": rel, "found": "watcher", "by": self.ws.activity(), **finding}
            )

    def _check_events(self) -> dict[str, Any] | None:
        head = self.ws.events._read_head()
        path = self.ws.events.path
        size, expected = path.stat().st_size, head.get("size")
        if expected is None or size == expected:
            return None
        if size > expected:
            extra = path.read_bytes()[expected:]
            os.truncate(path, expected)
            return {
                "problem": f"{len(extra)} bytes appended outside the API",
                "preview": extra[:200].decode(errors="replace"),
                "restored": True,
            }
        return {"problem": f"file shrank from {expected} to {size} bytes", "restored": False}

    def _check_markdown(self, rel: str) -> dict[str, Any] | None:
        """Compare a markdown log with the chain's line hashes; put back the
        mirror copy when it differs (and the mirror itself still matches)."""
        self._read_new_appends()
        want = self._expected.get(rel, [])
        path = self.ws.paths.root / rel
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        line = self._first_change(rel, data, want)
        if line is None:
            return None
        lines = data.splitlines(keepends=True)
        shown = b"".join(lines[line - 1 :])[:200].decode(errors="replace")
        mirror = self.ws.events.mirror_path(rel)
        backup = mirror.read_bytes() if mirror.is_file() else b""
        restored = _first_mismatch(backup, want) is None
        if restored:
            tmp = path.with_name(path.name + ".restore")
            tmp.write_bytes(backup)
            os.replace(tmp, path)
        problem = "text written outside the API" if line > len(want) else "edited, deleted or truncated outside the API"
        return {"problem": f"line {line}: {problem}", "line": line, "now_reads": shown, "restored": restored}

    def _first_change(self, rel: str, data: bytes, want: list[str]) -> int | None:
        """`_first_mismatch`, with the part found intact last time compared as bytes
        (hashing every line at every look would cost more with every step of a run)."""
        intact, lines = self._verified.get(rel, (b"", 0))
        if lines > len(want) or not data.startswith(intact):
            intact, lines = b"", 0
        line = _first_mismatch(data[len(intact) :], want[lines:])
        if line is not None:
            self._verified.pop(rel, None)
            return lines + line
        self._verified[rel] = (data, len(want))
        return None

    def _read_new_appends(self) -> None:
        """Extend the expected line hashes with appends recorded since the last look."""
        with open(self.ws.events.path, "rb") as handle:
            handle.seek(self._events_offset)
            for raw in handle:
                if not raw.endswith(b"\n"):
                    break
                self._events_offset += len(raw)
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if event.get("kind") == "log.append":
                    self._expected.setdefault(event["payload"]["file"], []).extend(event["payload"]["lines"])


def _first_mismatch(data: bytes, want: list[str]) -> int | None:
    """The first line of `data` that differs from the expected line hashes."""
    have = line_hashes(data)
    for number, digest in enumerate(want, 1):
        if number > len(have) or have[number - 1] != digest:
            return number
    return len(want) + 1 if len(have) > len(want) else None
