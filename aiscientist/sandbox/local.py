"""Run commands as plain subprocesses, each in its own process group."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from aiscientist.sandbox.base import RunResult, SandboxSettings, scrubbed_env, tail


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_commands(argv_for, commands: Sequence[str], cwd: Path, timeout: float, env: dict[str, str], backend: str) -> RunResult:
    """Shared loop: run each command (as `argv_for(command)`) in a new session,
    stop at the first failure, kill the whole process group when a command
    times out and after each command (so no background child survives)."""
    start = time.monotonic()
    returncodes: list[int] = []
    timed_out = False
    with tempfile.TemporaryDirectory(prefix="aisci-run-") as tmp:
        out_path, err_path = Path(tmp, "stdout"), Path(tmp, "stderr")
        with open(out_path, "ab") as out, open(err_path, "ab") as err:
            for command in commands:
                proc = subprocess.Popen(argv_for(command), cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
                try:
                    returncodes.append(proc.wait(timeout=timeout))
                except subprocess.TimeoutExpired:
                    kill_group(proc.pid)
                    returncodes.append(proc.wait())
                    timed_out = True
                    err.write(f"\n[sandbox] timed out after {timeout:g}s: {command}\n".encode())
                finally:
                    kill_group(proc.pid)
                if timed_out or returncodes[-1] != 0:
                    break
        return RunResult(
            commands=list(commands),
            returncodes=returncodes,
            stdout_tail=tail(out_path),
            stderr_tail=tail(err_path),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
            backend=backend,
        )


class LocalSandbox:
    """No isolation beyond process groups and a scrubbed environment."""

    name = "local"

    def __init__(self, settings: SandboxSettings | None = None):
        self.settings = settings or SandboxSettings(backend="local")

    def run(
        self,
        commands: Sequence[str],
        cwd: Path,
        timeout: float,
        env: Mapping[str, str] | None = None,
        writable: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
    ) -> RunResult:
        return run_commands(lambda c: ["bash", "-c", c], commands, cwd, timeout, scrubbed_env(env), self.name)
