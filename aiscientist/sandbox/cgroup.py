"""One cgroup per sandbox invocation: every process it starts (setsid ones too) and every page
it puts in memory, tmpfs and shared memory included, counted against the settings' limits.

cgroup v2 where this host lets us make a child group with the `memory` and `pids` controllers,
else v1 (one group in each controller's hierarchy); each new group sits under the cgroup this
process is in, so any limit on us holds for it too. Both versions charge a tmpfs or `/dev/shm`
page to the group of the process that wrote it, so a step cannot hide memory in a RAM folder.
Where no memory controller is writable, memory falls back to a per-process address-space limit
(RLIMIT_AS, which counts neither tmpfs nor shared memory): said once as a warning, and recorded
in every result (`MemoryUse.enforced_by`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from pydantic import BaseModel

ROOT = Path("/sys/fs/cgroup")
RLIMIT = "rlimit (per process; tmpfs and shared memory not counted)"
log = logging.getLogger(__name__)


class MemoryUse(BaseModel):
    """How an invocation's memory was limited and what it used."""

    enforced_by: str  # "cgroup v2", "cgroup v1", "docker" or RLIMIT
    limit_mb: int | None
    peak_mb: float | None = None  # processes + tmpfs + shared memory (None: not measured)
    oom_kills: int = 0  # processes the kernel killed at the limit


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per controller ("" for the v2 hierarchy)."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK)


@cache
def _v2_parent(wanted: frozenset[str]) -> Path | None:
    """A v2 folder whose children get every controller in `wanted`: our own group, else the root.
    Looked for once per process (every invocation makes its group there): our own group cannot
    be removed while we are in it, nor the root."""
    own = _own_paths().get("")
    for mount in (ROOT, ROOT / "unified"):
        if not (mount / "cgroup.controllers").is_file():
            continue
        for folder in ([mount / own.lstrip("/")] if own else []) + [mount]:
            try:
                enabled = set((folder / "cgroup.subtree_control").read_text().split())
            except OSError:
                continue
            if wanted <= enabled and _writable(folder):
                return folder
    return None


@cache
def _v1_parent(controller: str) -> Path | None:
    """Our own group in a v1 controller's hierarchy, where we may make children (once per process)."""
    own = _own_paths().get(controller)
    folder = ROOT / controller / (own or "/").lstrip("/")
    return folder if own is not None and (folder / "cgroup.procs").is_file() and _writable(folder) else None


@cache
def memory_enforcement() -> str:
    """How memory is limited on this host; warns once when no cgroup can do it."""
    if _v2_parent(frozenset({"memory"})) is not None:
        return "cgroup v2"
    if _v1_parent("memory") is not None:
        return "cgroup v1"
    log.warning(
        "no writable memory cgroup here (v2 nor v1): sandbox.memory_mb falls back to a per-process address-space "
        "limit, which counts neither tmpfs nor shared memory"
    )
    return RLIMIT


@dataclass
class InvocationGroup:
    """The group(s) of one invocation: the child joins each folder's `cgroup.procs` before it executes
    the command (`sandbox.local.limited`), `kill` after each command."""

    folders: list[Path] = field(default_factory=list)  # every folder a process joins (v1: one per controller)
    memory: Path | None = None
    version: str = ""
    limit_mb: int | None = None

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        return found

    def kill(self) -> None:
        for _ in range(20):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, 9)

    def use(self) -> MemoryUse:
        """What the invocation used (a rlimit's when no memory group was made)."""
        if self.memory is None:
            return MemoryUse(enforced_by=RLIMIT if self.limit_mb else "none", limit_mb=self.limit_mb)
        v2 = self.version == "cgroup v2"
        peak = _read_int(self.memory / ("memory.peak" if v2 else "memory.max_usage_in_bytes"))
        events = _read_fields(self.memory / ("memory.events" if v2 else "memory.oom_control"))
        return MemoryUse(
            enforced_by=self.version,
            limit_mb=self.limit_mb,
            peak_mb=None if peak is None else round(peak / (1 << 20), 1),
            oom_kills=events.get("oom_kill", 0),
        )

    def close(self) -> None:
        self.kill()
        for folder in self.folders:
            for _ in range(100):  # the last exits may still be under way
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.01)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _read_fields(path: Path) -> dict[str, int]:
    try:
        pairs = [line.split() for line in path.read_text().splitlines()]
    except OSError:
        return {}
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}


def _make(parent: Path, limits: dict[str, str]) -> Path | None:
    folder = parent / f"aiscientist-{uuid.uuid4().hex[:12]}"
    try:
        folder.mkdir()
    except OSError:
        return None
    try:
        for name, value in limits.items():
            (folder / name).write_text(value)
    except OSError:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None
    return folder


def make_group(memory_mb: int | None, processes: int | None) -> InvocationGroup:
    """The group(s) for one invocation with these limits; an empty group where the host allows none
    (memory then falls back to the rlimit, processes to RLIMIT_NPROC)."""
    group = InvocationGroup(limit_mb=memory_mb)
    memory = {"memory.max": str(memory_mb << 20), "memory.swap.max": "0"} if memory_mb else {}
    pids = {"pids.max": str(processes)} if processes else {}
    wanted = frozenset(name for name, asked in (("memory", memory), ("pids", pids)) if asked)
    v2 = _v2_parent(wanted) if wanted else None
    if v2 is not None:
        folder = _make(v2, {**memory, **pids})
        if folder is not None:
            group.folders, group.version = [folder], "cgroup v2"
            group.memory = folder if memory else None
            return group
    parent = _v1_parent("memory") if memory_mb and memory_enforcement() == "cgroup v1" else None
    if memory_mb and parent is not None:
        limit = str(memory_mb << 20)
        settings = {"memory.limit_in_bytes": limit}
        if (parent / "memory.memsw.limit_in_bytes").exists():  # memory + swap: after memory, never below it
            settings["memory.memsw.limit_in_bytes"] = limit
        folder = _make(parent, settings)
        if folder is not None:
            group.folders.append(folder)
            group.memory, group.version = folder, "cgroup v1"
    parent = _v1_parent("pids") if pids else None
    folder = _make(parent, pids) if parent is not None else None
    if folder is not None:
        group.folders.append(folder)
    return group
