"""Which byte code sandboxed Python may read: only the interpreter library's own, read-only.

Python trusts a cached `.pyc` as the module it stands for, so no command may leave byte code that a
later one (the scorer importing a protected module) would read. Sandboxed interpreters therefore look
for byte code only under `PYTHONPYCACHEPREFIX`, never in `__pycache__/` beside a source, and write none.

The prefix is a mirror of the library's byte code: a folder laid out as Python's prefix expects
(prefix + source folder + `name.cpython-311.pyc`) holding only hard links to (across file systems,
symlinks to) the `.pyc` files the host already keeps beside the interpreter's stdlib and site-packages,
which the host interpreter itself runs; nothing is compiled, nothing comes from a workspace. It is
built once per library folder (and Python version, and the mtimes of the folders in it), atomically, in
the user's cache folder. bwrap and docker show each library folder's part of it read-only at `MIRROR_AT`:
a workspace source maps to a path absent there that no command can create, and a command whose mounts
overlap a library folder gets no mirror. The local backend is no boundary (its commands could write
the mirror on the host) and keeps a prefix that cannot exist, as does any host where no mirror can be made.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import site
import sys
import sysconfig
import tempfile
from functools import cache
from pathlib import Path

from aiscientist.sandbox.base import Mounts

# a path that can never exist (/dev/null is no folder): Python reads no byte code at all
NO_BYTECODE = "/dev/null/pycache"
MIRROR_AT = "/.aiscientist-bytecode"  # where bwrap and docker show the mirror (never the host's home)


def python_env(prefix: str = NO_BYTECODE) -> dict[str, str]:
    """Python reads byte code only under `prefix` (no user site packages), and writes none."""
    return {"PYTHONPYCACHEPREFIX": prefix, "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def cache_root() -> Path:
    return Path.home() / ".cache" / "aiscientist" / "bytecode"


@cache
def found_dirs() -> tuple[str, ...]:
    """The interpreter's own library folders (stdlib, site-packages), as its import path spells them."""
    paths = sysconfig.get_paths()
    found = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")} | set(site.getsitepackages())
    return tuple(sorted({os.path.normpath(p) for p in found if os.path.isdir(p)}))


def library_dirs() -> tuple[str, ...]:
    """The library folders not inside another (each gets a mirror of its own)."""
    dirs = found_dirs()
    return tuple(d for d in dirs if not any(d.startswith(other + os.sep) for other in dirs))


def identity(library: str) -> str:
    """One library folder's mirror, shared by every interpreter of this version using it (venvs on one base);
    a changed install (a package added or removed changes its site-packages' mtime) gets a new one."""
    inside = [d for d in found_dirs() if d == library or d.startswith(library + os.sep)]
    parts = [sys.version, sys.implementation.cache_tag or "", *(f"{d} {os.stat(d).st_mtime_ns}" for d in inside)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def mirror(library: str, root: Path | None = None) -> Path | None:
    """The mirror of `library` under `root` (built on first use; the byte code of `library/x.py` is
    in `<mirror>/library/x.cpython-311.pyc`), or None where none can be made (no cache tag, no byte
    code there, a read-only cache folder)."""
    try:
        target = (root or cache_root()) / identity(library)
    except OSError:
        return None
    return target if target.is_dir() else _build(target, library)


@cache
def _build(target: Path, library: str) -> Path | None:
    """Build `target` in a temporary folder beside it, then rename it into place (a mirror another
    process finished first stays). A build that failed is not tried again by this process."""
    tag = sys.implementation.cache_tag
    try:
        if not tag:
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=target.parent))
    except OSError:
        return None
    try:
        if _mirror_tree(library, partial, f".{tag}."):
            os.rename(partial, target)
    except OSError:
        pass
    shutil.rmtree(partial, ignore_errors=True)
    return target if target.is_dir() else None


def _mirror_tree(top: str, into: Path, tag: str) -> int:
    """Link every `__pycache__/*<tag>*.pyc` under `top` to where the prefix puts it; how many."""
    count = 0
    for folder, subdirs, _ in os.walk(top):
        if "__pycache__" not in subdirs:
            continue
        subdirs.remove("__pycache__")
        cached = os.path.join(folder, "__pycache__")
        try:
            names = [n for n in os.listdir(cached) if tag in n and n.endswith(".pyc")]
        except OSError:  # not ours to read: those modules compile from source
            continue
        if not names:
            continue
        place = os.path.join(into, folder.lstrip(os.sep))
        os.makedirs(place, exist_ok=True)
        for name in names:
            source, link = os.path.join(cached, name), os.path.join(place, name)
            try:
                os.link(source, link)
            except OSError:
                os.symlink(source, link)
        count += len(names)
    return count


def shown_mirror(mounts: Mounts, root: Path | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The prefix for a sandboxed command with these mounts and the (host, inside) folders to show
    read-only for it: each library folder's part of the mirror at `MIRROR_AT`. No mirror (NO_BYTECODE,
    nothing shown) when a mount lies inside a library folder or holds one: byte code there may be a
    command's, or a hidden file's."""
    libraries = [Path(d).resolve() for d in library_dirs()]
    for path in [*mounts.writable, *mounts.readonly, *mounts.hidden]:
        path = Path(path).resolve()
        if any(path.is_relative_to(lib) or lib.is_relative_to(path) for lib in libraries):
            return NO_BYTECODE, []
    built = [(library, mirror(library, root)) for library in library_dirs()]
    shown = [(f"{into}{library}", MIRROR_AT + library) for library, into in built if into is not None]
    return (MIRROR_AT, shown) if shown else (NO_BYTECODE, [])
