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
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from aiscientist.task import Task, glob_match
from aiscientist.util import untrusted
from aiscientist.util.text import name as shown

CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".pth", ".so", ".pyd", ".dylib")
_STARTUP_MODULES = {"sitecustomize", "usercustomize"}
READ_LIMIT = 256 << 20  # one file's bytes the host reads for evidence
SKIPPED = "skipped"  # an Entry kind: the walk's limits left this path unchecked


@dataclass(frozen=True)
class Entry:
    """One tree entry: a regular file (sha256), a link (its target) or other."""

    kind: str  # "file" | "link" | "other" | "skipped"
    digest: str = ""

    def to_json(self) -> str:
        return f"{self.kind}:{self.digest}"

    @classmethod
    def from_json(cls, text: str) -> Entry:
        kind, _, digest = text.partition(":")
        return cls(kind, digest)


def file_digest(root: Path, rel: str) -> str | None:
    """sha256 of regular file `root/rel` reached without following any link; None for
    anything else (a link on the way, a FIFO, a folder, nothing)."""
    try:
        fd = untrusted.open_file(root, rel, hard_links=True)
    except untrusted.Unreadable:
        return None
    with open(fd, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _clear_way(root: Path, parts: list[str]) -> None:
    """Remove what is in the way of `root/parts` (a link or file where a folder belongs, anything there)."""
    for end in range(1, len(parts) + 1):
        prefix = "/".join(parts[:end])
        try:
            info = os.lstat(root / prefix)  # the folders before it were checked to be folders
        except FileNotFoundError:
            break
        if end == len(parts) or not stat.S_ISDIR(info.st_mode):
            untrusted.remove_tree(root, prefix)
            break


def put_file(root: Path, rel: str, source: Path) -> None:
    """Make `root/rel` a fresh regular file with host file `source`'s bytes and mode: whatever is
    in the way is removed first, and nothing is written through a link. For task files after an
    untrusted run."""
    parts = rel.split("/")
    _clear_way(root, parts)
    mode = source.stat()
    with untrusted.file(root, parts, write=True) as fd:
        untrusted.replace_content(fd, source.read_bytes())
        os.fchmod(fd, stat.S_IMODE(mode.st_mode))
        os.utime(fd, ns=(mode.st_atime_ns, mode.st_mtime_ns))


def put_link(root: Path, rel: str, target: str) -> None:
    """Make `root/rel` a link to `target`, whatever was in the way removed first."""
    parts = rel.split("/")
    _clear_way(root, parts)
    with untrusted.folder(root, parts[:-1], create=True) as parent:
        os.symlink(target, parts[-1], dir_fd=parent)


def copy_out(root: Path, rel: str, target: Path) -> None:
    """Copy regular file `root/rel`, reached without following links, to host path `target`
    with its mode and times (Unreadable when it is no such file or over READ_LIMIT)."""
    fd = untrusted.open_file(root, rel, hard_links=True)
    try:
        info, data = os.fstat(fd), untrusted.read_all(fd, READ_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > READ_LIMIT:
        raise untrusted.Unreadable(rel, f"over {READ_LIMIT >> 20} MB")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    os.chmod(target, stat.S_IMODE(info.st_mode))
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def scan(root: Path, limits: untrusted.Limits = untrusted.LIMITS) -> dict[str, Entry]:
    """Every entry below `root` by relative path, without following any link; what the
    walk's limits left unchecked is an entry of kind "skipped" (its digest says why).
    A `.git` in a repository copy is data like any other (git's own lives outside)."""
    entries: dict[str, Entry] = {}
    walker = untrusted.TreeWalk(root, limits)
    for node, parent in walker:
        if node.kind == "link":
            entries[node.rel] = Entry("link", node.target)
        elif node.kind == "other":
            entries[node.rel] = Entry("other")
        elif node.kind == "file":
            try:
                entries[node.rel] = Entry("file", walker.digest(parent, node))
            except untrusted.Unreadable as err:
                entries[node.rel] = Entry("other" if "regular" in err.reason else SKIPPED, err.reason)
    for skipped in walker.skipped:
        entries[skipped.rel] = Entry(SKIPPED, skipped.reason)
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
    """Whether a new file is an output a step may leave: never code, whatever `outputs` says."""
    if rel == metrics_rel:
        return True
    if is_code(rel) or any(is_code(part) or part == "__pycache__" for part in rel.split("/")[:-1]):
        return False
    return task.outputs is None or any(glob_match(rel, pattern) for pattern in task.outputs)


def violations(
    task: Task, root: Path, baseline: dict[str, Entry], current: dict[str, Entry], metrics_rel: str
) -> list[str]:
    """Why the tree at `root` may not be evaluated (empty when it may); paths are shown
    escaped (`aiscientist.util.text.name`), so a hostile name cannot break a record."""
    found: list[str] = []
    for rel, entry in sorted(current.items()):
        if entry.kind == SKIPPED:
            if baseline.get(rel) != entry:
                found.append(f"{shown(rel)}: not checked ({entry.digest})")
            continue
        if entry.kind == "other":
            found.append(f"{shown(rel)}: not a regular file (FIFO, socket or device)")
            continue
        if rel == metrics_rel and entry.kind == "link":
            found.append(f"{shown(rel)}: the metrics file is a link (its target is not read)")
            continue
        if entry.kind == "link" and baseline.get(rel) != entry and link_escapes(root, rel, entry.digest):
            found.append(f"{shown(rel)}: a link that leaves the repository ({shown(entry.digest)})")
            continue
        if baseline.get(rel) == entry:
            continue
        reason = shadows(rel) if rel not in baseline else None
        if reason:
            found.append(f"{shown(rel)}: {reason}")
        elif not task.is_editable(rel) and not (rel not in baseline and allowed_output(task, rel, metrics_rel)):
            found.append(
                f"{shown(rel)}: {'changed' if rel in baseline else 'created'} outside the editable files"
                " and declared outputs"
            )
    for rel in sorted(set(baseline) - set(current)):
        if not task.is_editable(rel):
            found.append(f"{shown(rel)}: a task file was deleted")
    return found


def folders(root: Path) -> list[str]:
    """Every folder below `root`, walked without following links (within the walk's limits)."""
    return [node.rel for node, _ in untrusted.TreeWalk(root) if node.kind == "dir"]


def kept_folders(baseline: dict[str, Entry], own: Iterable[str], entries: Iterable[str]) -> set[str]:
    """The folders a reset keeps: the baseline's `own` (empty ones too) and every folder
    holding a baseline entry or one of `entries`."""
    kept = set(own)
    for rel in [*baseline, *entries]:
        parts = rel.split("/")[:-1]
        kept.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    return kept


def sweep(
    root: Path, keep: set[str], keep_folders: set[str], passes: int = 8, limits: untrusted.Limits = untrusted.LIMITS
) -> list[str]:
    """Remove every entry below `root` that is neither in `keep` nor a kept folder (a folder
    goes whole). Walked again while a listing was cut short by the walk's limits, so a
    folder of more names than one walk lists is emptied too."""
    removed: list[str] = []
    for _ in range(passes):
        walker = untrusted.TreeWalk(root, limits, enter=keep_folders.__contains__)
        extra = [n.rel for n, _ in walker if n.rel not in (keep_folders if n.kind == "dir" else keep)]
        for rel in extra:
            untrusted.remove_tree(root, rel)
        removed += extra
        if not walker.skipped or not extra:
            break
    return removed


def reset_tree(
    task: Task, root: Path, baseline: dict[str, Entry], pristine: Path, own_folders: Iterable[str] | None = None
) -> list[str]:
    """Put `root` back to baseline + editable files: remove what is neither (with
    `own_folders`, the baseline's folders, every other folder too) and restore changed task
    files from `pristine`. Returns the paths it touched."""
    touched: list[str] = []
    current = scan(root)
    for rel, entry in current.items():
        if rel in baseline and baseline[rel] == entry:
            continue
        if task.is_editable(rel) and entry.kind == "file":
            continue
        if entry.kind == SKIPPED:
            top = _new_top(rel, baseline)
            if top is not None:
                untrusted.remove_tree(root, top)  # what the walk could not check goes, from where it began
                touched.append(top)
            continue
        untrusted.remove_tree(root, rel)
        touched.append(rel)
    keep = {rel for rel, e in current.items() if baseline.get(rel) == e or (task.is_editable(rel) and e.kind == "file")}
    if own_folders is not None:  # (run folders made before setup kept them: folders stay as they are)
        touched += sweep(root, keep, kept_folders(baseline, own_folders, keep))
    for rel, entry in baseline.items():
        if task.is_editable(rel) or (rel in current and current[rel] == entry and rel not in touched):
            continue
        if entry.kind == "link":
            put_link(root, rel, entry.digest)
        elif entry.kind == "file" and (pristine / rel).is_file():
            put_file(root, rel, pristine / rel)
        touched.append(rel)
    return sorted(set(touched))


def _new_top(rel: str, baseline: dict[str, Entry]) -> str | None:
    """The outermost folder of `rel` that holds nothing of the baseline (None if none does)."""
    parts = [] if rel == "." else rel.split("/")
    for end in range(1, len(parts) + 1):
        prefix = "/".join(parts[:end])
        if prefix not in baseline and not any(b.startswith(prefix + "/") for b in baseline):
            return prefix
    return None


def keep_pristine(task: Task, root: Path, baseline: dict[str, Entry], pristine: Path) -> None:
    """Copy every non-editable task file of the baseline tree into `pristine`."""
    for rel, entry in baseline.items():
        if entry.kind == "file" and not task.is_editable(rel):
            copy_out(root, rel, pristine / rel)
