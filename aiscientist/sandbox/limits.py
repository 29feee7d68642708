"""Resource limits for sandboxed commands: memory, processes and file size.

Memory and file size are rlimits set in the child before it executes (they are
inherited by everything it starts). The process limit is a `pids` cgroup when
this host lets us make one (v1 or v2): RLIMIT_NPROC is kept too, but the kernel
does not enforce it for root, which is who runs the sandbox on CI machines.
"""

from __future__ import annotations

import contextlib
import os
import resource
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from aiscientist.sandbox.base import SandboxSettings

def _pids_parent() -> Path | None:
    """A cgroup folder under which we may make pids-limited groups, or None."""
    v1 = Path("/sys/fs/cgroup/pids")
    if (v1 / "cgroup.procs").is_file() and os.access(v1, os.W_OK):
        return v1
    v2 = Path("/sys/fs/cgroup")
    control = v2 / "cgroup.subtree_control"
    if control.is_file() and "pids" in control.read_text().split() and os.access(v2, os.W_OK):
        return v2
    return None


@contextlib.contextmanager
def pids_cgroup(limit: int | None) -> Iterator[Path | None]:
    """A fresh pids cgroup capped at `limit` for one run (None when unavailable)."""
    parent = _pids_parent() if limit else None
    group = None
    if parent is not None:
        group = parent / f"aiscientist-{uuid.uuid4().hex[:12]}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(str(limit))
        except OSError:
            group = None
    try:
        yield group
    finally:
        if group is not None:
            kill_cgroup(group)
            with contextlib.suppress(OSError):
                group.rmdir()


def kill_cgroup(group: Path) -> None:
    """SIGKILL every process still in `group`."""
    for _ in range(20):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)


def preexec(settings: SandboxSettings, group: Path | None) -> Callable[[], None]:
    """The function the child runs before exec: new session, limits, cgroup."""

    def apply() -> None:
        os.setsid()
        if group is not None:
            (group / "cgroup.procs").write_text("0")
        if settings.memory_mb:
            _cap(resource.RLIMIT_AS, settings.memory_mb << 20)
        if settings.file_size_mb:
            _cap(resource.RLIMIT_FSIZE, settings.file_size_mb << 20)
        if settings.processes:
            _cap(resource.RLIMIT_NPROC, settings.processes)

    return apply


def _cap(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (limit, limit))
