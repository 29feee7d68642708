"""Run commands as plain subprocesses with limits, killing all they started.

The local backend is NOT a security boundary: commands see and may write the
whole host as the current user. It only limits resources and makes sure that
nothing a step started (even a `setsid` child that left its session) outlives it.

Memory and processes are limited by one cgroup per invocation (`sandbox/cgroup.py`: processes,
tmpfs and shared memory counted; v2, else v1) where this host lets us make one; file size is an
rlimit set in the child before it executes (inherited by everything it starts). Without a memory
cgroup, memory is an address-space rlimit per process; RLIMIT_NPROC is kept too, but the kernel
does not enforce it for root, which is who runs the sandbox on CI machines.

The child joins its cgroup and sets its limits in a short bash prologue (`limited`) that then
executes the command, never in a Python `preexec_fn`: that would make every invocation a full
fork of this (large) process, ~20 ms here plus the copy-on-write faults it leaves behind, where
without it the child is started by vfork.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import selectors
import shlex
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from aiscientist.sandbox.base import (
    CommandsResult,
    Mounts,
    OutputRing,
    Sandbox,
    SandboxSettings,
    allowed_env,
    run_each,
)
from aiscientist.sandbox.bytecode import python_env
from aiscientist.sandbox.cgroup import InvocationGroup, make_group
from aiscientist.sandbox.interpreter import sandbox_path
from aiscientist.util.untrusted import MEMORY_DIR

MARKER = "AISCIENTIST_SANDBOX_RUN"


def kill_marked(marker: str) -> None:
    """SIGKILL every process whose environment carries `MARKER=marker`."""
    for pid in marked(marker):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)


def wait_for(proc: subprocess.Popen, timeout: float) -> int:
    """`proc.wait(timeout)` without its polling (sleeps of up to 50 ms each): wait on
    the process's pidfd, so a command's end is seen at once."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:  # a kernel without pidfds
        return proc.wait(timeout=timeout)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    return proc.wait()


def run_commands(
    argv_for: Callable[[str], list[str]],
    commands: Sequence[str],
    cwd: Path,
    timeout: float,
    env: dict[str, str],
    backend: str,
    settings: SandboxSettings,
) -> CommandsResult:
    """Run each command (as `argv_for(command)`) in a new session with the settings'
    limits and after each command (and on a timeout) kill everything it started."""
    marker = uuid.uuid4().hex
    env = {**env, MARKER: marker}
    out, err = OutputRing(), OutputRing()  # output goes through pipes into bounded rings, never a host file
    with contextlib.closing(make_group(settings.memory_mb, settings.processes)) as group:

        def run_one(command: str) -> tuple[int, bool]:
            (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
            pump = threading.Thread(
                target=pump_pipes, args=([(out_r, out), (err_r, err)], stopped := threading.Event())
            )
            try:
                proc = subprocess.Popen(
                    limited(settings, group, argv_for(command)),
                    cwd=cwd,
                    env=env,
                    stdout=out_w,
                    stderr=err_w,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except BaseException:
                for fd in (out_r, out_w, err_r, err_w):
                    os.close(fd)
                raise
            os.close(out_w)
            os.close(err_w)
            pump.start()
            try:
                return wait_for(proc, timeout), False
            except subprocess.TimeoutExpired:
                _kill_all(proc, group, marker)
                return proc.wait(), True
            finally:
                _kill_all(proc, group, marker)
                stopped.set()
                pump.join()

        result = run_each(commands, run_one, timeout, out, err, backend)
        result.survivors = _survivors(group, marker)
        result.memory = group.use()
        return result


def pump_pipes(pipes: list[tuple[int, OutputRing]], stopped: threading.Event, linger: float = 2.0) -> None:
    """Copy each pipe into its ring until every writer is gone; once `stopped` is set
    (the command ended and was killed), drain for at most `linger` seconds, then close."""
    selector = selectors.DefaultSelector()
    for fd, ring in pipes:
        selector.register(fd, selectors.EVENT_READ, ring)
    deadline = None
    try:
        while selector.get_map():
            if stopped.is_set() and deadline is None:
                deadline = time.monotonic() + linger
            if deadline is not None and time.monotonic() > deadline:
                break
            ready = selector.select(0.05 if deadline is not None else 0.5)
            if not ready and deadline is not None:
                break
            for key, _ in ready:
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    key.data.write(chunk)
                else:
                    selector.unregister(key.fd)
                    os.close(key.fd)
    finally:
        for key in list(selector.get_map().values()):
            selector.unregister(key.fd)
            os.close(key.fd)
        selector.close()


def marked(marker: str) -> list[int]:
    """The processes whose environment carries `MARKER=marker`. Every process is looked at after
    every invocation, so each costs only an open, its reads and a close (no buffered file object)."""
    needle, own = f"{MARKER}={marker}".encode(), str(os.getpid())
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and entry.name != own and needle in _environ(entry.path).split(b"\0"):
            found.append(int(entry.name))
    return found


def _environ(process: str) -> bytes:
    """A /proc/PID folder's environ, all of it (b"" for a process gone or not ours to read)."""
    try:
        fd = os.open(f"{process}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return b""
    finally:
        os.close(fd)
    return b"".join(chunks)


def _survivors(group: InvocationGroup, marker: str) -> int:
    """How many processes of a run are still alive after up to a second of killing them."""
    for _ in range(100):
        left = set(marked(marker)) | group.pids()
        if not left:
            return 0
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)
        time.sleep(0.01)
    return len(left)


def _kill_all(proc: subprocess.Popen, group: InvocationGroup, marker: str) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    if group.folders:
        group.kill()  # holds every process the command started, setsid ones too
    else:
        kill_marked(marker)


def limited(settings: SandboxSettings, group: InvocationGroup, argv: list[str]) -> list[str]:
    """`argv` run by a bash prologue that first joins the invocation's group(s) and sets the
    limits (an address-space limit only where no memory cgroup counts the invocation's memory),
    then executes it: what it starts inherits both. The new session is Popen's."""
    lines = ["set +o posix"]  # ulimit's units are 1024 bytes outside POSIX mode
    for folder in group.folders:
        procs = shlex.quote(str(folder / "cgroup.procs"))
        lines.append(f"echo 0 > {procs} || {{ echo '[sandbox] cannot join the cgroup' {procs} >&2; exit 125; }}")
    caps = [
        ("-v", resource.RLIMIT_AS, settings.memory_mb << 20 if settings.memory_mb and group.memory is None else None),
        ("-f", resource.RLIMIT_FSIZE, settings.file_size_mb << 20 if settings.file_size_mb else None),
        ("-u", resource.RLIMIT_NPROC, settings.processes),
    ]
    for flag, kind, value in caps:
        if value is not None:
            limit = _cap(kind, value) // (1 if kind == resource.RLIMIT_NPROC else 1024)
            lines.append(f"ulimit {flag} {limit} || {{ echo '[sandbox] cannot set ulimit {flag}' >&2; exit 125; }}")
    return ["bash", "-c", "\n".join([*lines, 'exec "$@"']), "aiscientist-sandbox", *argv]


def _cap(kind: int, value: int) -> int:
    """`value`, or the hard limit (which the child inherits) when that is lower."""
    hard = resource.getrlimit(kind)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


class LocalSandbox(Sandbox):
    """Resource limits and process cleanup only; no isolation (see module doc)."""

    name = "local"

    def execute(
        self, commands: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None, mounts: Mounts
    ) -> CommandsResult:
        # a command's private /tmp lives in memory where the host has a tmpfs, as under bwrap
        with tempfile.TemporaryDirectory(prefix="aisci-local-", dir=MEMORY_DIR) as private_tmp:
            # no byte code mirror: a command here could write into it for the next (`sandbox/bytecode.py`)
            extra = {"PATH": sandbox_path(None), "HOME": private_tmp, "TMPDIR": private_tmp, **python_env()}
            return run_commands(
                lambda c: ["bash", "-c", c],
                commands,
                cwd,
                timeout,
                allowed_env({**(env or {}), **extra}),
                self.name,
                self.settings,
            )
