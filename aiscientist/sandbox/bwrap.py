"""Bubblewrap: no network, read-only root, only the run's folders writable."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from aiscientist.sandbox.base import RunResult, SandboxSettings, scrubbed_env
from aiscientist.sandbox.local import run_commands


@cache
def bwrap_works() -> bool:
    """True when `bwrap` is installed and can create its namespaces here."""
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class BwrapSandbox:
    name = "bwrap"

    def __init__(self, settings: SandboxSettings | None = None):
        self.settings = settings or SandboxSettings(backend="bwrap")

    def argv(self, writable: Sequence[Path], readonly: Sequence[Path], hidden: Sequence[Path], cwd: Path, private_tmp: Path) -> list[str]:
        """The host's /tmp stays visible read-only (task folders may live there);
        TMPDIR and HOME point at a private writable folder instead."""
        args = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for path in hidden:
            if Path(path).exists():  # nothing to hide otherwise (and bwrap cannot create it)
                args += ["--tmpfs", str(Path(path).resolve())]
        for path in [private_tmp, *writable]:
            args += ["--bind", str(Path(path).resolve()), str(Path(path).resolve())]
        for path in readonly:
            if Path(path).exists():
                args += ["--ro-bind", str(Path(path).resolve()), str(Path(path).resolve())]
        return args + ["--chdir", str(Path(cwd).resolve()), "--setenv", "HOME", str(private_tmp), "--setenv", "TMPDIR", str(private_tmp), "--", "bash", "-c"]

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
        with tempfile.TemporaryDirectory(prefix="aisci-sandbox-") as private_tmp:
            prefix = self.argv(writable or [cwd], readonly, hidden, cwd, Path(private_tmp))
            return run_commands(lambda c: [*prefix, c], commands, cwd, timeout, scrubbed_env(env), self.name)
