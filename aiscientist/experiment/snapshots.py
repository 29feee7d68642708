"""The submission's snapshots: our own content-addressed store, in place of git.

No tool that interprets a tree (git's configs, attributes, filters, hooks, embedded
repositories) ever runs on the untrusted submission. A snapshot is a manifest of
the tree's regular files and links, read without following any link; file bytes
are kept once each as blobs named by their sha256. Tags (`baseline`, `best`) name a
snapshot. Nested `.git` folders the code makes are data and are left out, like git's
own exclude did. Layout under `state/snapshots/` (RunPaths.snapshots):

    blobs/ab/abcdef…   file bytes          trees/<sha256>.json   one manifest
    tags.json          {tag: tree}         log.jsonl             every snapshot taken
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from aiscientist.experiment.integrity import Entry, scan
from aiscientist.records.paths import LEGACY_GIT, RunPaths, write_atomic
from aiscientist.records.snapshot import Item, Snapshot
from aiscientist.util import untrusted

BASELINE_TAG = "baseline"
BEST_TAG = "best"
FILE_CAP_BYTES = 64 << 20  # a larger file the step made is never stored
_CHUNK = 1 << 20


class SnapshotError(RuntimeError):
    pass


def _is_git_data(rel: str) -> bool:
    return ".git" in rel.split("/")


def _blob_path(paths: RunPaths, sha: str) -> Path:
    return paths.snapshot_blobs / sha[:2] / sha


def _put_blob(paths: RunPaths, fd: int) -> tuple[str, int]:
    """Copy an open file into the store; (sha256, size)."""
    tmp = paths.snapshot_blobs / f".incoming-{os.getpid()}"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    digest, size, offset = hashlib.sha256(), 0, 0
    with open(tmp, "wb") as out:
        while chunk := os.pread(fd, _CHUNK, offset):
            digest.update(chunk)
            out.write(chunk)
            offset += len(chunk)
            size += len(chunk)
    sha = digest.hexdigest()
    target = _blob_path(paths, sha)
    target.parent.mkdir(exist_ok=True)
    tmp.replace(target)
    return sha, size


def take(
    paths: RunPaths,
    tag: str,
    message: str,
    keep: Callable[[str], bool] = lambda rel: True,
    limited: Callable[[str], bool] = lambda rel: False,
    budget: int | None = None,
    tree: dict[str, Entry] | None = None,
) -> Snapshot:
    """Snapshot the submission as `tag`: every file and link `keep(rel)` accepts.
    A `limited` file (one the step made or changed) is skipped when it is over
    FILE_CAP_BYTES or would take the limited files past `budget` bytes."""
    submission = paths.submission
    entries = scan(submission) if tree is None else tree
    snap = Snapshot(message=message, at=datetime.now(UTC).isoformat(timespec="seconds"))
    stored = 0
    for rel, entry in sorted(entries.items()):
        if _is_git_data(rel) or not keep(rel):
            continue
        if entry.kind == "link":
            snap.files[rel] = Item(link=entry.digest)
            continue
        if entry.kind != "file":
            continue
        try:
            fd = untrusted.open_file(submission, rel, hard_links=True)
        except untrusted.Unreadable:
            continue
        try:
            info = os.fstat(fd)
            capped = limited(rel)
            if capped and (info.st_size > FILE_CAP_BYTES or (budget is not None and stored + info.st_size > budget)):
                snap.skipped.append(rel)
                continue
            sha, size = _put_blob(paths, fd)
        finally:
            os.close(fd)
        stored += size if capped else 0
        snap.files[rel] = Item(sha=sha, size=size, exec=bool(info.st_mode & stat.S_IXUSR))
    tree_sha = save_tree(paths, snap)
    tags = _tags(paths)
    tags[tag] = tree_sha
    write_atomic(paths.snapshot_tags, json.dumps(tags, indent=1, sort_keys=True))
    with open(paths.snapshot_log, "a") as log:
        log.write(json.dumps({"tag": tag, "tree": tree_sha, "message": message, "at": snap.at}) + "\n")
    return snap


def save_tree(paths: RunPaths, snap: Snapshot) -> str:
    """Store a manifest; its sha256 names it."""
    body = snap.model_dump_json(indent=1)
    tree_sha = hashlib.sha256(body.encode()).hexdigest()
    (paths.snapshot_trees).mkdir(parents=True, exist_ok=True)
    write_atomic(paths.snapshot_trees / f"{tree_sha}.json", body)
    return tree_sha


def clear_incoming(paths: RunPaths) -> list[str]:
    """Remove the half-copied blobs a killed process left; their store-relative paths."""
    blobs = paths.snapshot_blobs
    left = sorted(blobs.glob(".incoming-*")) + sorted(blobs.glob("*/.incoming-*")) if blobs.is_dir() else []
    for path in left:
        path.unlink()
    return [path.relative_to(paths.snapshots).as_posix() for path in left]


def _tags(paths: RunPaths) -> dict[str, str]:
    found = paths.snapshot_tags
    return json.loads(found.read_text()) if found.is_file() else {}


def exists(paths: RunPaths, tag: str) -> bool:
    return tag in _tags(paths)


def legacy(paths: RunPaths) -> str | None:
    """Why a run folder from before the store (its history a git repository in
    `state/submission.git`) cannot be used, or None: no git or other tool runs on a run folder."""
    if paths.snapshot_tags.is_file() or not os.path.lexists(paths.git_dir):
        return None
    return (
        f"this run folder predates the snapshot store (its history is a git repository, {LEGACY_GIT}); "
        "this version never runs git on a run folder, so it cannot be resumed or graded: start a new run"
    )


def load(paths: RunPaths, tag: str) -> Snapshot:
    """The snapshot a tag names (a run folder from before the store is refused: `legacy`)."""
    if (why := legacy(paths)) is not None:
        raise SnapshotError(why)
    tree = _tags(paths).get(tag)
    if tree is None:
        raise SnapshotError(f"no snapshot tagged {tag!r} in {paths.snapshots}")
    return Snapshot.model_validate_json((paths.snapshot_trees / f"{tree}.json").read_text())


def blob(paths: RunPaths, item: Item) -> bytes:
    return _blob_path(paths, item.sha).read_bytes()


def text_of(paths: RunPaths, tag: str, rel: str) -> str:
    """A file's text in a snapshot (empty when the snapshot does not hold it)."""
    item = load(paths, tag).files.get(rel)
    return blob(paths, item).decode(errors="replace") if item is not None and item.link is None else ""


def restore(paths: RunPaths, tag: str, files: Iterable[str]) -> list[str]:
    """Put `files` back into the submission as `tag` holds them, never writing
    through a link; a file the snapshot lacks is removed. Returns what changed."""
    snap, changed = load(paths, tag), []
    for rel in files:
        parts = rel.split("/")
        item = snap.files.get(rel)
        try:
            with untrusted.folder(paths.submission, parts[:-1], create=item is not None) as parent:
                if item is None or item.link is not None:
                    _unlink(parent, parts[-1])
                    if item is not None:
                        os.symlink(item.link, parts[-1], dir_fd=parent)
                else:
                    _write(parent, parts[-1], blob(paths, item), item.exec)
        except (OSError, untrusted.Unreadable) as err:
            if item is not None:
                raise SnapshotError(f"cannot restore {rel} from snapshot {tag!r}: {err}") from err
            continue
        changed.append(rel)
    return changed


def _unlink(parent: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        pass


def _write(parent: int, name: str, data: bytes, executable: bool) -> None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISDIR(info.st_mode) and (not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
        _unlink(parent, name)  # a link, FIFO or hard link is replaced, never written through
    fd = untrusted.open_at(parent, name, write=True)
    try:
        untrusted.replace_content(fd, data)
        os.fchmod(fd, 0o755 if executable else 0o644)
    finally:
        os.close(fd)


def diff_stat(paths: RunPaths, tag: str, files: Iterable[str]) -> str:
    """`git diff --stat`'s shape for the submission against `tag`: the snapshot's files
    and `files`, compared in Python (difflib) on bytes read without following links."""
    snap, rows, plus, minus = load(paths, tag), [], 0, 0
    for rel in sorted(set(snap.files) | set(files)):
        if _is_git_data(rel):
            continue
        item = snap.files.get(rel)
        before = blob(paths, item) if item is not None and item.link is None else b""
        try:
            after, present = untrusted.read_head(paths.submission, rel, FILE_CAP_BYTES), True
        except untrusted.Unreadable:
            after, present = b"", False
        if before == after and (item is not None) == present:
            continue
        added, removed = _counts(before, after)
        plus, minus = plus + added, minus + removed
        rows.append(f" {rel} | {added + removed} {'+' * min(added, 40)}{'-' * min(removed, 40)}")
    if not rows:
        return ""
    return "\n".join([*rows, f" {len(rows)} file(s) changed, {plus} insertion(s)(+), {minus} deletion(s)(-)"]) + "\n"


def _counts(before: bytes, after: bytes) -> tuple[int, int]:
    old, new = before.decode(errors="replace").splitlines(), after.decode(errors="replace").splitlines()
    added = removed = 0
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith(("+++", "---")):
            continue
        added += line.startswith("+")
        removed += line.startswith("-")
    return added, removed
