"""One iterative walker for every host-side reader of a tree untrusted code wrote.

The integrity scan, step folders, the workspace map and its search, the viewer and the
graders walk with it. It is iterative (no recursion, so a 1,500-deep tree is no
RecursionError), opens every folder relative to its parent's descriptor with O_NOFOLLOW
and never follows a link, never opens a FIFO, device or socket (they are reported as
"other"), and stops at limits on depth, entries, bytes read, name and path length. What
it did not look at is listed in `Walk.skipped` with the reason, so a caller records it
instead of crashing. Import it through `aiscientist.util.untrusted`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from aiscientist.util.untrusted.descriptors import DIR_FLAGS, Link, Odd, Unreadable, open_at, read_all

EntryKind = Literal["dir", "file", "link", "other"]
JSON_DEPTH = 64


@dataclass(frozen=True)
class Limits:
    """How much of an untrusted tree one walk looks at."""

    depth: int = 128  # folders below the root
    entries: int = 250_000  # names listed, folders included
    bytes: int = 8 << 30  # file bytes read (hashed or returned) by the walk's readers
    name_chars: int = 255  # longer names are skipped, not opened
    path_bytes: int = 2048  # folders whose path is longer are not entered (host paths stay under PATH_MAX)


LIMITS = Limits()


@dataclass(frozen=True)
class TreeEntry:
    """One entry below the root: relative POSIX path, kind, lstat size and mtime, link target."""

    rel: str
    kind: EntryKind
    size: int = 0
    mtime: float = 0.0
    target: str = ""


@dataclass(frozen=True)
class Skipped:
    rel: str
    reason: str


@dataclass
class Walk:
    """What a walk saw, and what it left out and why."""

    nodes: list[TreeEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.skipped

    def files(self) -> list[TreeEntry]:
        return [n for n in self.nodes if n.kind == "file"]


class TreeWalk:
    """Iterate `(node, parent_fd)` depth first in sorted order; `parent_fd` stays open
    until the next item, so a caller can read a file it is given with `read`/`digest`
    without walking the path again. `enter(rel)` says which folders to go into. The root
    is a path or a folder already open (from `folder`/`entry`; the walk does not close it)."""

    def __init__(self, root: Path | int, limits: Limits = LIMITS, enter: Callable[[str], bool] | None = None):
        self.root, self.limits, self.enter = root if isinstance(root, int) else Path(root), limits, enter
        self.skipped: list[Skipped] = []
        self.listed = 0
        self.bytes_read = 0

    def skip(self, rel: str, reason: str) -> None:
        self.skipped.append(Skipped(rel, reason))

    def __iter__(self) -> Iterator[tuple[TreeEntry, int]]:
        try:
            top = os.dup(self.root) if isinstance(self.root, int) else os.open(self.root, DIR_FLAGS)
        except OSError as err:
            self.skip(".", f"cannot open the folder: {err.strerror}")
            return
        stack: list[tuple[int, str, Iterator[os.DirEntry[str]]]] = []
        try:
            stack.append((top, "", self._listing(top, "")))
            while stack:
                fd, base, listing = stack[-1]
                entry = next(listing, None)
                if entry is None:
                    os.close(fd)
                    stack.pop()
                    continue
                node = self._node(entry, base, fd)
                if node is None:
                    continue
                yield node, fd
                if node.kind == "dir" and self._may_enter(node.rel, len(stack)):
                    child = self._open_dir(fd, entry.name, node.rel)
                    if child is not None:
                        stack.append((child, node.rel + "/", self._listing(child, node.rel)))
        finally:
            for fd, _, _ in stack:
                os.close(fd)

    def _listing(self, fd: int, rel: str) -> Iterator[os.DirEntry[str]]:
        try:
            with os.scandir(fd) as found:
                entries: list[os.DirEntry[str]] = []
                for entry in found:
                    if self.listed >= self.limits.entries:
                        self.skip(rel or ".", f"entry limit ({self.limits.entries}) reached: the rest was not listed")
                        break
                    self.listed += 1
                    entries.append(entry)
        except OSError as err:
            self.skip(rel or ".", f"cannot list the folder: {err.strerror}")
            return iter(())
        return iter(sorted(entries, key=lambda e: e.name))

    def _node(self, entry: os.DirEntry[str], base: str, parent: int) -> TreeEntry | None:
        rel = base + entry.name
        if len(entry.name) > self.limits.name_chars:
            self.skip(rel[:300], f"name longer than {self.limits.name_chars} characters")
            return None
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return None  # removed while we looked
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(entry.name, dir_fd=parent)
            except OSError:
                target = ""
            return TreeEntry(rel, "link", info.st_size, info.st_mtime, target)
        kind: EntryKind = "dir" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"
        return TreeEntry(rel, kind, info.st_size, info.st_mtime)

    def _may_enter(self, rel: str, depth: int) -> bool:
        if self.enter is not None and not self.enter(rel):
            return False
        if depth >= self.limits.depth:
            self.skip(rel, f"depth limit ({self.limits.depth} folders) reached: not entered")
            return False
        if len(os.fsencode(rel)) > self.limits.path_bytes:
            self.skip(rel, f"path longer than {self.limits.path_bytes} bytes: not entered")
            return False
        return True

    def _open_dir(self, parent: int, name: str, rel: str) -> int | None:
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):  # gone or swapped for a link meanwhile
                self.skip(rel, f"cannot open the folder: {err.strerror}")
            return None

    def read(self, parent: int, node: TreeEntry, max_bytes: int, hard_links: bool = False) -> bytes:
        """The bytes of file `node` (from `parent`, the fd it came with); Unreadable past `max_bytes`."""
        fd = open_in(parent, node.rel, hard_links)
        try:
            return self.take(fd, node.rel, max_bytes)
        finally:
            os.close(fd)

    def digest(self, parent: int, node: TreeEntry) -> str:
        """sha256 of file `node`, counted against the walk's byte limit."""
        fd = open_in(parent, node.rel, hard_links=True)
        try:
            size = os.fstat(fd).st_size
            self._charge(node.rel, size)
            with open(fd, "rb", closefd=False) as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        finally:
            os.close(fd)

    def take(self, fd: int, rel: str, max_bytes: int) -> bytes:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise Unreadable(rel, f"larger than {max_bytes} bytes ({size})")
        self._charge(rel, size)
        data = read_all(fd, max_bytes + 1)
        if len(data) > max_bytes:
            raise Unreadable(rel, f"grew past {max_bytes} bytes while read")
        return data

    def _charge(self, rel: str, size: int) -> None:
        if self.bytes_read + size > self.limits.bytes:
            raise Unreadable(rel, f"byte limit of the walk ({self.limits.bytes}) reached")
        self.bytes_read += size


def open_in(parent: int, rel: str, hard_links: bool) -> int:
    name = rel.rsplit("/", 1)[-1]
    try:
        return open_at(parent, name, hard_links=hard_links)
    except Link:
        raise Unreadable(rel, "a symbolic link (never followed)") from None
    except Odd as err:
        raise Unreadable(rel, err.reason) from None
    except FileNotFoundError:
        raise Unreadable(rel, "missing") from None
    except OSError as err:
        raise Unreadable(rel, err.strerror or "cannot open") from None


def walk(root: Path | int, limits: Limits = LIMITS, enter: Callable[[str], bool] | None = None) -> Walk:
    """Every entry below `root` (links listed, never followed) and what was skipped."""
    walker = TreeWalk(root, limits, enter)
    nodes = [node for node, _ in walker]
    return Walk(nodes, walker.skipped)
