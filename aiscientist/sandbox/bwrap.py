"""Bubblewrap: a sandbox that shows only what a step needs.

Visible inside: the system's runtime folders and the Python environment
(read-only), a few files of /etc, a private /tmp (also HOME and TMPDIR), the
`writable` folders and the `readonly` paths — nothing else of the host: no home
folders, no host /tmp or /run, no sockets, no sibling folders of the run.
Hidden paths that fall inside a visible folder are covered. No network, no
capabilities, its own PID namespace (nothing outlives a command), resource
limits from the settings: one memory cgroup per invocation counting processes,
`/tmp` and `/dev/shm` (`sandbox/cgroup.py`); `/dev` read-only but for its devices,
`/dev/shm` a tmpfs of at most `memory_mb`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import site
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from aiscientist.sandbox.base import CommandsResult, Mounts, Sandbox, allowed_env, resolved, to_cover
from aiscientist.sandbox.bytecode import python_env, shown_mirror
from aiscientist.sandbox.interpreter import launcher_dir, sandbox_path
from aiscientist.sandbox.local import run_commands

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "fonts",
    "mime.types",
    "os-release",
    "debian_version",
)
PRIVATE_TMP = "/tmp"


@cache
def bwrap_works() -> bool:
    """True when `bwrap` is installed and can create its namespaces here."""
    if shutil.which("bwrap") is None:
        return False
    probe = [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "true",
    ]
    try:
        return subprocess.run(probe, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@cache
def python_dirs() -> tuple[str, ...]:
    """The interpreter's installation and every folder on its import path (a venv's
    site-packages, one a `.pth` file adds), outside the system folders. The working
    folder and folders holding it are left out: they are not the environment."""
    cwd = Path.cwd().resolve()
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    imports = {Path(p).resolve() for p in sys.path[1:] if p and Path(p).is_dir()}
    found = [Path(p).resolve() for p in prefixes if Path(p).is_dir()] + [
        p for p in imports if not cwd.is_relative_to(p)
    ]
    kept = [p for p in found if not any(p.is_relative_to(s) for s in SYSTEM_DIRS)]
    return tuple(sorted({str(p) for p in kept if not any(p != q and p.is_relative_to(q) for q in kept)}))


def etc_paths() -> list[str]:
    return [f"/etc/{e}" for e in ETC_ENTRIES if os.path.exists(f"/etc/{e}")]


def runtime_paths() -> list[str]:
    """The host paths every backend shows read-only: system folders (links such as
    /bin -> usr/bin are recreated, not mounted), a few /etc entries, the Python environment
    and the launcher that makes it `python`."""
    system = [d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    return system + etc_paths() + list(python_dirs()) + [str(launcher_dir())]


@cache
def private_paths(limit: int = 20_000) -> tuple[str, ...]:
    """What the /etc entries shown to commands hold that not every user may read (e.g.
    `/etc/ssl/private`). Commands run as the host's user, root too, and an owner-only
    file is readable by its owner: each backend covers these instead of showing them."""
    found: list[str] = []
    stack, seen = [(path, True) for path in etc_paths()], 0
    while stack and seen < limit:
        path, top = stack.pop()
        seen += 1
        try:
            info = os.stat(path) if top else os.lstat(path)  # a shown entry that is a link shows its target
        except OSError:
            continue
        folder = stat.S_ISDIR(info.st_mode)
        need = 0o005 if folder else 0o004  # others may read it (and enter a folder)
        if stat.S_ISLNK(info.st_mode):
            continue
        if info.st_mode & need != need:
            found.append(path)
        elif folder:
            with contextlib.suppress(OSError):
                stack += [(os.path.join(path, name), False) for name in os.listdir(path)]
    return tuple(sorted(found))


def _system_args() -> list[str]:
    args: list[str] = []
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
    for path in runtime_paths():
        args += ["--ro-bind", path, path]
    return args


class BwrapSandbox(Sandbox):
    name = "bwrap"

    def argv(self, mounts: Mounts, cwd: Path) -> list[str]:
        writable, readonly, hidden = mounts
        tmp_size = (
            ["--size", str(self.settings.file_size_mb << 20)] if self.settings.file_size_mb else []
        )  # /tmp lives in memory
        # the private /tmp first: an environment or a run folder under host /tmp is mounted onto it
        args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        # /dev read-only but for its devices (null, zero, urandom...) and /dev/shm, a tmpfs no larger
        # than the memory cap; the cgroup counts its pages (and /tmp's) with the processes' memory
        shm = ["--size", str(self.settings.memory_mb << 20)] if self.settings.memory_mb else []
        args += ["--dev", "/dev", *shm, "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--proc", "/proc"]
        args += [*tmp_size, "--tmpfs", PRIVATE_TMP, *_system_args()]
        shown: list[Path | str] = [*resolved(writable)]
        for path in shown:
            args += ["--bind", str(path), str(path)]
        for path in resolved(readonly):
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
                shown.append(path)
        prefix, mirrored = shown_mirror(mounts)
        for host, inside in mirrored:  # after the writable binds: nothing shown writable covers it
            args += ["--ro-bind", host, inside]
        shown += runtime_paths()  # e.g. a task shipped inside site-packages
        for path in to_cover([*hidden, *map(Path, private_paths())], shown):
            if path.is_dir():
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                args += ["--ro-bind", "/dev/null", str(path)]
        path = sandbox_path([*SYSTEM_DIRS, *python_dirs()])  # never a folder commands can write
        env = {"PATH": path, "HOME": PRIVATE_TMP, "TMPDIR": PRIVATE_TMP, **python_env(prefix)}
        for key, value in env.items():
            args += ["--setenv", key, value]
        return args + ["--remount-ro", "/", "--chdir", str(Path(cwd).resolve()), "--", "bash", "-c"]

    def execute(
        self, commands: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None, mounts: Mounts
    ) -> CommandsResult:
        prefix = self.argv(mounts, cwd)
        return run_commands(lambda c: [*prefix, c], commands, cwd, timeout, allowed_env(env), self.name, self.settings)
