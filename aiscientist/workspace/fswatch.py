"""watchdog's observer in a process of its own, sending the run's process its changes in batches.

Each inotify event costs about 120 µs of CPU in watchdog's pipeline (a reader thread, a
queue, a dispatcher thread). Inside the run's process those threads would compete with
the run for the GIL at every event; here they run in a child process, which sends what
it saw every BATCH_S. Protected files are hashed in the
child as soon as their change arrives, so an edit that is soon undone is still caught.
The child is `python -m aiscientist.workspace.fswatch` (not multiprocessing, whose children
import the parent's main script again); it imports nothing heavy.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import NamedTuple

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from aiscientist.records.paths import SUBMISSION, submission_rel
from aiscientist.util import untrusted


class _StopRace(logging.Filter):
    """watchdog logs an error when a change arrives while its observer stops;
    nothing is wrong (the last batch holds what was delivered)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_StopRace())

BATCH_S = 0.02
WALK_DEPTH = 100_000  # how deep a new tree the observer follows (deeper: reported lost, the engine still checks)
WALK_STACK = 1 << 30  # the observer threads' stack (reserved, touched only as deep as a walk goes)
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
# Only changes: reads (open/close without writing) never leave the kernel. Each write
# is seen (IN_MODIFY) only in submission/, where protected files live and must be hashed
# at once. Elsewhere a file counts as changed when its writer closes it (every process
# closes its files at exit), so the run's own appends to files it keeps open - the event
# and call logs - wake no one.
CHANGED = [
    FileCreatedEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
EVERY_WRITE = [*CHANGED, FileModifiedEvent]
EVERY_WRITE_IN = SUBMISSION


class FileChange(NamedTuple):
    """One change the observer saw."""

    kind: str  # watchdog's event type: created, modified, closed, deleted, moved
    rel: str  # the path inside the run folder
    at: float  # time.monotonic() on arrival (one clock for every process on Linux)
    ts: str  # the wall clock on arrival, ISO
    intact: bool | None  # a protected file: whether it still had its pristine hash


class WatchSpec(NamedTuple):
    root: str  # the run folder, resolved
    unwatched: tuple[str, ...]  # top-level folders not watched at all
    ignored: tuple[str, ...]  # path prefixes not reported
    protected: dict[str, str]  # path inside submission/ -> SHA-256


def intact(root: str, rel: str, digest: str) -> bool:
    """`root/rel` is a regular file with this SHA-256, reached without following a link
    (no FIFO opened: the submission is written by untrusted code)."""
    try:
        fd = untrusted.open_file(Path(root), rel, hard_links=True)
    except untrusted.Unreadable:
        return False
    found, offset = hashlib.sha256(), 0
    try:
        while chunk := os.pread(fd, 1 << 20, offset):
            found.update(chunk)
            offset += len(chunk)
        return found.hexdigest() == digest
    finally:
        os.close(fd)


class _Collector(FileSystemEventHandler):
    def __init__(self, spec: WatchSpec):
        self.spec, self.prefix = spec, spec.root + os.sep
        self.lock = threading.Lock()
        self.changes: list[FileChange] = []

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory and event.event_type == "modified":
            return
        at, ts = time.monotonic(), datetime.now(UTC).isoformat(timespec="milliseconds")
        for path in (event.src_path, getattr(event, "dest_path", "")):
            path = os.fsdecode(path)
            if not path.startswith(self.prefix) or len(path) == len(self.prefix):
                continue
            rel = path[len(self.prefix) :]
            if rel.startswith(self.spec.ignored):
                continue
            inside = submission_rel(rel)
            digest = self.spec.protected.get(inside) if inside is not None else None
            change = FileChange(
                event.event_type, rel, at, ts, None if digest is None else intact(self.spec.root, rel, digest)
            )
            with self.lock:
                self.changes.append(change)

    def take(self) -> list[FileChange]:
        with self.lock:
            taken, self.changes = self.changes, []
        return taken


def observe(spec: WatchSpec, conn: Connection) -> None:
    """The child: watch the run folder until told to stop or the run's process is gone. A folder
    watchdog cannot follow (its recursive walk fails on a tree deeper than Python's recursion limit)
    ends that folder's watch, not the child: it is reported as ("lost", (folder, why))."""
    collector, observer = _Collector(spec), Observer()
    lost: list[tuple[str, str]] = []

    def _lose(args: threading.ExceptHookArgs) -> None:
        folder = getattr(getattr(args.thread, "watch", None), "path", spec.root)
        lost.append(
            (os.path.relpath(os.fsdecode(folder), spec.root), f"{args.exc_type.__name__}: {args.exc_value}"[:300])
        )

    threading.excepthook = _lose
    threading.stack_size(WALK_STACK)  # watchdog's walk of a new folder recurses once per level
    sys.setrecursionlimit(WALK_DEPTH)
    try:
        observer.schedule(collector, spec.root, recursive=False, event_filter=CHANGED)
        for entry in os.scandir(spec.root):
            if entry.is_dir(follow_symlinks=False) and entry.name not in spec.unwatched:
                events = EVERY_WRITE if entry.name == EVERY_WRITE_IN else CHANGED
                observer.schedule(collector, entry.path, recursive=True, event_filter=events)
        observer.start()
    except OSError as err:  # e.g. inotify limits reached
        conn.send(("error", str(err)))
        return
    conn.send(("ready", None))
    try:
        while True:
            stopping = conn.poll(BATCH_S)  # the only request is "stop"
            if stopping:
                observer.stop()
                observer.join()
            batch = collector.take()
            if batch:
                conn.send(("changes", batch))
            while lost:
                conn.send(("lost", lost.pop()))
            if stopping:
                conn.send(("stopped", None))
                return
    except (EOFError, OSError):  # the run's process is gone
        observer.stop()


class ObserverProcess:
    """The run's side: starts the child and hands each batch to `on_changes`, on a
    thread of its own, until `stop` (which hands over the last batch first)."""

    interpreter: str = sys.executable  # the child runs on the run's own Python

    def __init__(
        self,
        spec: WatchSpec,
        on_changes: Callable[[list[FileChange]], None],
        on_lost: Callable[[str, str], None] = lambda folder, why: None,
    ):
        self.spec, self.on_changes, self.on_lost = spec, on_changes, on_lost
        self._reader = threading.Thread(target=self._read, name="workspace-watcher-reader", daemon=True)

    def start(self) -> None:
        """Raises OSError with the reason when the child cannot watch."""
        mine, theirs = Pipe()
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
        command = [self.interpreter, "-m", "aiscientist.workspace.fswatch", str(theirs.fileno())]
        self._process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env)
        theirs.close()
        try:
            mine.send(self.spec)
            if not mine.poll(START_TIMEOUT_S):
                raise OSError(f"the file observer process did not start within {START_TIMEOUT_S:.0f} s")
            kind, detail = mine.recv()
        except (EOFError, OSError) as err:
            self._process.kill()
            code = self._process.wait()
            raise OSError(
                f"the file observer process ended at start (exit code {code}): {str(err) or 'no answer'}"
            ) from None
        if kind == "error":
            self._process.wait()
            raise OSError(detail)
        self._conn = mine
        self._reader.start()

    def stop(self) -> None:
        try:
            self._conn.send("stop")
        except OSError:  # the child is gone already
            pass
        self._reader.join(STOP_TIMEOUT_S)
        try:
            self._process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._conn.close()

    def _read(self) -> None:
        while True:
            try:
                kind, payload = self._conn.recv()
            except (EOFError, OSError):
                return
            if kind == "stopped":
                return
            if kind == "lost":
                self.on_lost(*payload)
                continue
            self.on_changes(payload)


if __name__ == "__main__":  # the child: `python -m aiscientist.workspace.fswatch FD`
    import aiscientist.workspace.fswatch as fswatch  # by its real name, so the parent can unpickle its Changes

    channel = Connection(int(sys.argv[1]))
    fswatch.observe(channel.recv(), channel)
