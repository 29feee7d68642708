"""`python` inside every sandbox is the interpreter that runs aiscientist.

Hosts reach their Python in many ways: a virtual environment anywhere (under `/tmp`
too), pyenv shims in a home folder the sandbox hides, wrappers. None of that is
visible inside a sandbox, so commands get a PATH rebuilt from what they can see: a
launcher folder whose `python` and `python3` exec `sys.executable` (the same
environment, venv included), then that interpreter's own `bin/`, then the host's
PATH entries the sandbox shows. Entries it cannot show (shims, empty, relative
or `..` entries) are dropped rather than left dangling or pointing into the working folder.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

LAUNCHED = ("python", "python3")


def launcher_dir() -> Path:
    """A folder of `python`/`python3` scripts that exec this interpreter (made once per
    interpreter, remade if something removed it)."""
    digest = hashlib.sha256(sys.executable.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"aiscientist-python-{os.getuid()}-{digest}"
    script = f"#!/bin/sh\nexec '{sys.executable}' \"$@\"\n"
    for name in LAUNCHED:
        target = folder / name
        if not target.is_file() or target.read_text() != script:
            folder.mkdir(mode=0o755, exist_ok=True)
            partial = target.with_suffix(f".{os.getpid()}")
            partial.write_text(script)
            partial.chmod(0o755)
            partial.replace(target)
    return folder


def interpreter_bin() -> Path:
    """The folder of the interpreter as it was started (a venv's `bin/`, not its target)."""
    return Path(sys.executable).parent


def sandbox_path(visible: Sequence[Path | str] | None) -> str:
    """The PATH for sandboxed commands: the launcher, the interpreter's folder, then the
    host's absolute PATH entries that lie inside `visible` (all of them when None)."""
    shown = None if visible is None else [Path(v) for v in visible]
    entries = [str(launcher_dir()), str(interpreter_bin())]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or os.path.normpath(entry) != entry.rstrip("/") or entry in entries:
            continue  # empty, relative or `/usr/../tmp`-style entries could name a folder commands write
        if shown is None or any(Path(entry).is_relative_to(folder) for folder in shown):
            entries.append(entry)
    return os.pathsep.join(entries)
