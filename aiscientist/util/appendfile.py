"""An append-only file kept open between appends, locked across threads and processes.

Opening and closing the file for every line would wake a run's file watcher once
more per line (a close after writing is an event of its own). Threads serialise on
a lock; processes on an `flock` of the descriptor. A forked child opens the file
again (a shared description would share its lock), and so does anyone holding the
descriptor when the path has come to name another file.
"""

from __future__ import annotations

import fcntl
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockedAppendFile:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.RLock()
        self._depth = 0  # nested holds by the thread holding the lock
        self._fd: tuple[int, int] | None = None  # (descriptor, the process that opened it)
        self._closer: weakref.finalize | None = None

    @contextmanager
    def locked(self, shared: bool = False) -> Iterator[int]:
        """The open descriptor (O_APPEND, readable), held under both locks."""
        with self._lock:
            fd = self._open() if self._depth == 0 else self._fd[0]  # type: ignore[index]
            if self._depth == 0:
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            self._depth += 1
            try:
                yield fd
            finally:
                self._depth -= 1
                if self._depth == 0:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def _open(self) -> int:
        if self._fd is not None:
            fd, pid = self._fd
            try:
                here, there = os.stat(self.path), os.fstat(fd)
                if pid == os.getpid() and (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
                    return fd
            except FileNotFoundError:
                pass
            assert self._closer is not None
            if pid == os.getpid():
                self._closer()  # closes the old descriptor
            else:
                self._closer.detach()  # the parent's: not ours to close
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self._fd, self._closer = (fd, os.getpid()), weakref.finalize(self, os.close, fd)
        return fd
