"""What a run may leave in a repository copy, checked on the host as plain data.

Evaluation must see exactly the task's files, the editable files and the declared
outputs (docs/contracts.md, "Task outputs"). Against the baseline tree (links recorded,
never followed), anything else a run leaves — a changed task file, new code outside
the editable files (a shadowing module, `sitecustomize.py`, a `.pth`), a link out of
the repository, a FIFO or device — makes the step invalid. Before a run the tree is
put back to baseline + editable files, so nothing one step left can act in the next.
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
from aiscientist.util import safe_open

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


def _parts(rel: str) -> list[str] | None:
    parts = list(Path(rel).parts)
    return parts if parts and not any(p in ("..", "/") for p in parts) else None


def open_regular(root: Path, rel: str) -> int | None:
    """A read descriptor for regular file `root/rel`, reached without following any
    link and never blocking on a FIFO; None for a link on the way, a special file or
    a path leaving `root`."""
    parts = _parts(rel)
    if parts is None:
        return None
    try:
        with safe_open.folder(root, parts[:-1]) as parent:
            return safe_open.open_file(parent, parts[-1], len(parts), hard_links=True)
    except (OSError, safe_open.Link, safe_open.Odd):
        return None


def read_regular(root: Path, rel: str) -> bytes | None:
    fd = open_regular(root, rel)
    if fd is None:
        return None
    try:
        return safe_open.read_all(fd, sys.maxsize)
    finally:
        os.close(fd)


def safe_file(root: Path, rel: str) -> Path | None:
    """`root/rel` when no part of it below `root` is a link and it is a regular
    file (what the host may read of an untrusted tree); None otherwise."""
    fd = open_regular(root, rel)
    if fd is None:
        return None
    os.close(fd)
    return root / rel


def scan(root: Path) -> dict[str, Entry]:
    """Every entry below `root` by relative path, without following any link.
    A `.git` in a repository copy is data like any other (git's own lives outside)."""
    entries: dict[str, Entry] = {}
    for folder, dirs, files, dir_fd in os.fwalk(root, follow_symlinks=False):
        rel_base = Path(folder).relative_to(root)
        for name in [*dirs, *files]:
            rel = (rel_base / name).as_posix()
            try:
                mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
            except FileNotFoundError:
                continue  # removed while we looked
            if stat.S_ISLNK(mode):
                entries[rel] = Entry("link", os.readlink(name, dir_fd=dir_fd))
                if name in dirs:
                    dirs.remove(name)
            elif not stat.S_ISDIR(mode):
                entries[rel] = _file_entry(dir_fd, name)
    return entries


def _file_entry(dir_fd: int, name: str) -> Entry:
    try:
        fd = safe_open.open_file(dir_fd, name, hard_links=True)
    except (OSError, safe_open.Link, safe_open.Odd):
        return Entry("other")
    with open(fd, "rb") as opened:  # closes fd
        return Entry("file", hashlib.file_digest(opened, "sha256").hexdigest())


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


def violations(
    task: Task, root: Path, baseline: dict[str, Entry], current: dict[str, Entry], metrics_rel: str
) -> list[str]:
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
            found.append(
                f"{rel}: {'changed' if rel in baseline else 'created'} outside the editable files and declared outputs"
            )
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
