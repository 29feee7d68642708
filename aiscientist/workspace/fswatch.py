"""The run folder's observer in a process of its own, sending the run's process its changes in batches.

The child (`python -m aiscientist.workspace.fswatch`, not multiprocessing, whose children import the
parent's main script again; it imports nothing heavy) watches with `workspace/inotify.py`'s bounded
tree of inotify watches: one thread, woken only by an event or the run's process, so the run's own
threads never compete with it for the GIL. What it saw is sent at most BATCH_S after the first change.
Protected files are hashed in the child as soon as their change arrives, so an edit that is soon
undone is still caught. A folder it does not watch (too deep, too many, refused by the kernel) is
sent once as ("lost", (folder, why)); the rest goes on being watched.
"""

from __future__ import annotations

import hashlib
import os
import select
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

from aiscientist.records.paths import SUBMISSION, submission_rel
from aiscientist.util import untrusted
from aiscientist.workspace.inotify import CHANGED, EVERY_WRITE, Found, WatchTree, depth

BATCH_S = 0.02
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
# Only changes: reads (open/close without writing) never leave the kernel. Each write
# is seen (IN_MODIFY) only in submission/, where protected files live and must be hashed
# at once. Elsewhere a file counts as changed when its writer closes it (every process
# closes its files at exit), so the run's own appends to files it keeps open - the event
# and call logs - wake no one.
EVERY_WRITE_IN = SUBMISSION


class FileChange(NamedTuple):
    """One change the observer saw."""

    kind: str  # created, modified (a write or chmod, in submission/ only), closed (after writing), deleted, moved
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


def masks(spec: WatchSpec) -> Callable[[str], int | None]:
    """Each folder's events: every write in submission/, the close after writing elsewhere,
    none in an unwatched top-level folder."""

    def mask(rel: str) -> int | None:
        top = rel.split("/", 1)[0]
        if depth(rel) >= 1 and top in spec.unwatched:
            return None
        return EVERY_WRITE if top == EVERY_WRITE_IN else CHANGED

    return mask


def changes(spec: WatchSpec, found: list[Found]) -> list[FileChange]:
    """What is reported of what the tree saw: ignored paths left out, protected files hashed (also
    those inside a folder moved or deleted, whose own events never come)."""
    at, ts = time.monotonic(), datetime.now(UTC).isoformat(timespec="milliseconds")
    out = []
    for kind, rel, folder in found:
        paths = [rel]
        inside = submission_rel(rel)
        if folder and inside is not None and kind in ("moved", "deleted"):
            paths += [f"{SUBMISSION}/{file}" for file in spec.protected if not inside or file.startswith(inside + "/")]
        for path in paths:
            if path.startswith(spec.ignored):
                continue
            inside = submission_rel(path)
            digest = spec.protected.get(inside) if inside is not None else None
            out.append(FileChange(kind, path, at, ts, None if digest is None else intact(spec.root, path, digest)))
    return out


def observe(spec: WatchSpec, conn: Connection) -> None:
    """The child: watch the run folder until told to stop or the run's process is gone."""
    try:
        tree = WatchTree(spec.root, masks(spec))
    except OSError as err:  # e.g. inotify limits reached
        conn.send(("error", str(err)))
        return
    conn.send(("ready", None))
    pending: list[FileChange] = []
    due: float | None = None  # when the pending changes are sent
    try:
        while True:
            if (pending or tree.lost) and due is None:
                due = time.monotonic() + BATCH_S
            wait = None if due is None else max(0.0, due - time.monotonic())
            ready = select.select([conn, tree], [], [], wait)[0]
            stopping = conn in ready  # the only request is "stop" (or the run's process is gone)
            if tree in ready or stopping:
                pending += changes(spec, tree.read())
            if stopping or (due is not None and time.monotonic() >= due):
                if pending:
                    conn.send(("changes", pending))
                while tree.lost:
                    conn.send(("lost", tree.lost.pop(0)))
                pending, due = [], None
            if stopping:
                conn.send(("stopped", None))
                return
    except (EOFError, OSError):  # the run's process is gone
        return
    finally:
        tree.close()


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
