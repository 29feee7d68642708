"""Run commands as plain subprocesses with limits, killing all they started.

The local backend is NOT a security boundary: commands see and may write the
whole host as the current user. It only limits resources and makes sure that
nothing a step started (even a `setsid` child that left its session) outlives it.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from aiscientist.sandbox.base import Mounts, RunResult, Sandbox, SandboxSettings, scrubbed_env, tail
from aiscientist.sandbox.limits import kill_cgroup, pids_cgroup, preexec

MARKER = "AISCIENTIST_SANDBOX_RUN"
# a command's private /tmp lives in memory where the host has a tmpfs, as under bwrap
MEMORY_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None


def kill_marked(marker: str) -> None:
    """SIGKILL every process whose environment carries `MARKER=marker`."""
    needle = f"{MARKER}={marker}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(entry.path, "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), 9)


def python_env(private_tmp: str) -> dict[str, str]:
    """Python must not read byte code or user site packages a command could plant
    for the next one; its caches go to the private temporary folder."""
    return {"PYTHONPYCACHEPREFIX": f"{private_tmp}/.pycache", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


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


def run_commands(argv_for: Callable[[str], list[str]], commands: Sequence[str], cwd: Path, timeout: float, env: dict[str, str], backend: str, settings: SandboxSettings) -> RunResult:
    """Run each command (as `argv_for(command)`) in a new session with the
    settings' limits, stop at the first failure, and after each command (and on
    a timeout) kill everything it started."""
    start = time.monotonic()
    returncodes: list[int] = []
    timed_out = False
    marker = uuid.uuid4().hex
    env = {**env, MARKER: marker}
    # unnamed files: nothing to unlink after (removing folders is slow on some disks)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, pids_cgroup(settings.processes) as group:
        for command in commands:
            proc = subprocess.Popen(argv_for(command), cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=preexec(settings, group))
            try:
                returncodes.append(wait_for(proc, timeout))
            except subprocess.TimeoutExpired:
                _kill_all(proc, group, marker)
                returncodes.append(proc.wait())
                timed_out = True
                err.write(f"\n[sandbox] timed out after {timeout:g}s: {command}\n".encode())
            finally:
                _kill_all(proc, group, marker)
            if timed_out or returncodes[-1] != 0:
                break
        return RunResult(
            commands=list(commands),
            returncodes=returncodes,
            stdout_tail=tail(out),
            stderr_tail=tail(err),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
            backend=backend,
        )


def _kill_all(proc: subprocess.Popen, group: Path | None, marker: str) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    if group is not None:
        kill_cgroup(group)  # holds every process the command started, setsid ones too
    else:
        kill_marked(marker)


class LocalSandbox(Sandbox):
    """Resource limits and process cleanup only; no isolation (see module doc)."""

    name = "local"

    def __init__(self, settings: SandboxSettings | None = None):
        self.settings = settings or SandboxSettings(backend="local")

    def execute(self, commands: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None, mounts: Mounts) -> RunResult:
        with tempfile.TemporaryDirectory(prefix="aisci-local-", dir=MEMORY_DIR) as private_tmp:
            extra = {"TMPDIR": private_tmp, **python_env(private_tmp), **(env or {})}
            return run_commands(lambda c: ["bash", "-c", c], commands, cwd, timeout, scrubbed_env(extra), self.name, self.settings)
