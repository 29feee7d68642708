"""What a run may leave in a repository copy, checked on the host as plain data.

Evaluation must see exactly the task's files, the editable files and the task's
declared outputs. The baseline tree (every entry after setup, links recorded as
links, never followed) is kept in `.pristine/tree.json`; after a run, anything
else — a changed task file, a new code file outside the editable ones (a module
that shadows one the evaluator imports, `sitecustomize.py`, a `.pth` file), a
link that leaves the repository, a FIFO or device — is a violation that makes
the step invalid. Before a run, the tree is put back to baseline + editable files
so that nothing one step left behind can act in the next.

The rule for outputs (see docs/contracts.md, "Task outputs"): a task that lists
`outputs` globs may create only those (plus its metrics file); a task that lists
none may create any new file that is not code.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from aiscientist.task import Task, glob_match

CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".pth", ".so", ".pyd", ".dylib")
_STARTUP_MODULES = {"sitecustomize", "usercustomize"}


@dataclass(frozen=True)
class Entry:
    """One tree entry: a regular file (sha256), a link (its target) or other."""

    kind: str  # "file" | "link" | "other"
    digest: str = ""

    def to_json(self) -> str:
        return f"{self.kind}:{self.digest}"

    @classmethod
    def from_json(cls, text: str) -> Entry:
        kind, _, digest = text.partition(":")
        return cls(kind, digest)


def sha256_fd(fd: int) -> str:
    digest = hashlib.sha256()
    while chunk := os.read(fd, 1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def open_regular(path: Path) -> int | None:
    """A read descriptor for `path` if it is a regular file, never following a
    final link and never blocking on a FIFO; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file (links and special files give None)."""
    fd = open_regular(path)
    if fd is None:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def safe_file(root: Path, rel: str) -> Path | None:
    """`root/rel` when no part of it below `root` is a link and it is a regular
    file (what the host may read of an untrusted tree); None otherwise."""
    path = root
    for part in Path(rel).parts:
        if part in ("..", "/"):
            return None
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return None
        if stat.S_ISLNK(mode):
            return None
    return path if stat.S_ISREG(os.lstat(path).st_mode) else None


def scan(root: Path, skip: tuple[str, ...] = (".git",)) -> dict[str, Entry]:
    """Every entry below `root` by relative path, without following any link."""
    entries: dict[str, Entry] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        rel_base = base.relative_to(root)
        for name in list(dirs):
            full = base / name
            if name in skip and folder == str(root):
                dirs.remove(name)
            elif full.is_symlink():
                dirs.remove(name)
                entries[(rel_base / name).as_posix()] = Entry("link", os.readlink(full))
        for name in files:
            full, rel = base / name, (rel_base / name).as_posix()
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                entries[rel] = Entry("link", os.readlink(full))
            elif stat.S_ISREG(mode) and (fd := open_regular(full)) is not None:
                try:
                    entries[rel] = Entry("file", sha256_fd(fd))
                finally:
                    os.close(fd)
            else:
                entries[rel] = Entry("other")
    return entries


def is_code(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(CODE_SUFFIXES) or name.split(".")[0] in _STARTUP_MODULES


def shadows(rel: str) -> str | None:
    """Why a new file could change what the evaluator runs, or None."""
    name = rel.rsplit("/", 1)[-1]
    stem = name.split(".")[0]
    if name.endswith(".pth"):
        return "a .pth file (runs code at interpreter start)"
    if stem in _STARTUP_MODULES:
        return f"{stem} (runs at interpreter start)"
    if name.endswith(CODE_SUFFIXES) and (stem in sys.stdlib_module_names or stem in sys.builtin_module_names):
        return f"it shadows the standard-library module {stem!r}"
    return None


def link_escapes(root: Path, rel: str, target: str) -> bool:
    """Whether a link at `rel` resolves (lexically) outside `root`."""
    if os.path.isabs(target):
        return True
    resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    return resolved == ".." or resolved.startswith("../")


def allowed_output(task: Task, rel: str, metrics_rel: str) -> bool:
    if rel == metrics_rel:
        return True
    if task.outputs is not None:
        return any(glob_match(rel, pattern) for pattern in task.outputs)
    return not is_code(rel)


def violations(task: Task, root: Path, baseline: dict[str, Entry], current: dict[str, Entry], metrics_rel: str) -> list[str]:
    """Why the tree at `root` may not be evaluated (empty when it may)."""
    found: list[str] = []
    for rel, entry in sorted(current.items()):
        if entry.kind == "other":
            found.append(f"{rel}: not a regular file (FIFO, socket or device)")
            continue
        if entry.kind == "link" and baseline.get(rel) != entry and link_escapes(root, rel, entry.digest):
            found.append(f"{rel}: a link that leaves the repository ({entry.digest})")
            continue
        if baseline.get(rel) == entry:
            continue
        reason = shadows(rel) if rel not in baseline else None
        if reason:
            found.append(f"{rel}: {reason}")
        elif not task.is_editable(rel) and not (rel not in baseline and allowed_output(task, rel, metrics_rel)):
            found.append(f"{rel}: {'changed' if rel in baseline else 'created'} outside the editable files and declared outputs")
    for rel in sorted(set(baseline) - set(current)):
        if not task.is_editable(rel):
            found.append(f"{rel}: a task file was deleted")
    return found


def reset_tree(task: Task, root: Path, baseline: dict[str, Entry], pristine: Path) -> list[str]:
    """Put `root` back to baseline + editable files: remove what is neither and
    restore changed task files from `pristine`. Returns the paths it touched."""
    touched: list[str] = []
    current = scan(root)
    for rel, entry in current.items():
        if rel in baseline and baseline[rel] == entry:
            continue
        if task.is_editable(rel) and entry.kind == "file":
            continue
        (root / rel).unlink(missing_ok=True)
        touched.append(rel)
    for rel, entry in baseline.items():
        if task.is_editable(rel) or (rel in current and current[rel] == entry and rel not in touched):
            continue
        source, target = pristine / rel, root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.kind == "link":
            target.unlink(missing_ok=True)
            os.symlink(entry.digest, target)
        elif entry.kind == "file" and source.is_file():
            target.unlink(missing_ok=True)
            shutil.copy2(source, target)
        touched.append(rel)
    return sorted(set(touched))


def keep_pristine(task: Task, root: Path, baseline: dict[str, Entry], pristine: Path) -> None:
    """Copy every non-editable task file of the baseline tree into `pristine`."""
    for rel, entry in baseline.items():
        if entry.kind == "file" and not task.is_editable(rel):
            target = pristine / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, target, follow_symlinks=False)
