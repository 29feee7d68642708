"""Walk and read trees that untrusted code wrote, without interpreting them.

One walker for every host-side reader of an untrusted tree (the integrity scan, step
folders, the workspace map, the viewer, the graders). It is iterative (no recursion,
so a 1,500-deep tree is no RecursionError), opens every folder relative to its
parent's descriptor with O_NOFOLLOW and never follows a link, never opens a FIFO,
device or socket (they are reported as "other"), and stops at limits on depth,
entries, bytes read, name and path length. What it did not look at is listed in
`Walk.skipped` with the reason, so a caller records it instead of crashing.

Names are `str` as the OS gives them: bytes that are not UTF-8 are kept with
`surrogateescape` (`os.fsencode(rel)` gives the original bytes back); print them
with `aiscientist.util.text.clean`, never raw.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aiscientist.util import safe_open

NodeKind = Literal["dir", "file", "link", "other"]
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


class Unreadable(Exception):
    """A file the host will not read: why (a link, not a regular file, too large, missing)."""

    def __init__(self, rel: str, reason: str):
        super().__init__(f"{rel}: {reason}")
        self.rel, self.reason = rel, reason


@dataclass(frozen=True)
class Node:
    """One entry below the root: relative POSIX path, kind, lstat size and mtime, link target."""

    rel: str
    kind: NodeKind
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

    nodes: list[Node] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.skipped

    def files(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "file"]


class TreeWalk:
    """Iterate `(node, parent_fd)` depth first in sorted order; `parent_fd` stays open
    until the next item, so a caller can read a file it is given with `read`/`digest`
    without walking the path again. `enter(rel)` says which folders to go into."""

    def __init__(self, root: Path, limits: Limits = LIMITS, enter: Callable[[str], bool] | None = None):
        self.root, self.limits, self.enter = Path(root), limits, enter
        self.skipped: list[Skipped] = []
        self.listed = 0
        self.bytes_read = 0

    def skip(self, rel: str, reason: str) -> None:
        self.skipped.append(Skipped(rel, reason))

    def __iter__(self) -> Iterator[tuple[Node, int]]:
        try:
            top = os.open(self.root, safe_open.DIR_FLAGS)
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

    def _node(self, entry: os.DirEntry[str], base: str, parent: int) -> Node | None:
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
            return Node(rel, "link", info.st_size, info.st_mtime, target)
        kind: NodeKind = "dir" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"
        return Node(rel, kind, info.st_size, info.st_mtime)

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
            return os.open(name, safe_open.DIR_FLAGS, dir_fd=parent)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):  # gone or swapped for a link meanwhile
                self.skip(rel, f"cannot open the folder: {err.strerror}")
            return None

    def read(self, parent: int, node: Node, max_bytes: int, hard_links: bool = False) -> bytes:
        """The bytes of file `node` (from `parent`, the fd it came with); Unreadable past `max_bytes`."""
        fd = _open_in(parent, node.rel, hard_links)
        try:
            return self._take(fd, node.rel, max_bytes)
        finally:
            os.close(fd)

    def digest(self, parent: int, node: Node) -> str:
        """sha256 of file `node`, counted against the walk's byte limit."""
        fd = _open_in(parent, node.rel, hard_links=True)
        try:
            size = os.fstat(fd).st_size
            self._charge(node.rel, size)
            with open(fd, "rb", closefd=False) as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        finally:
            os.close(fd)

    def _take(self, fd: int, rel: str, max_bytes: int) -> bytes:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise Unreadable(rel, f"larger than {max_bytes} bytes ({size})")
        self._charge(rel, size)
        data = safe_open.read_all(fd, max_bytes + 1)
        if len(data) > max_bytes:
            raise Unreadable(rel, f"grew past {max_bytes} bytes while read")
        return data

    def _charge(self, rel: str, size: int) -> None:
        if self.bytes_read + size > self.limits.bytes:
            raise Unreadable(rel, f"byte limit of the walk ({self.limits.bytes}) reached")
        self.bytes_read += size


def _open_in(parent: int, rel: str, hard_links: bool) -> int:
    name = rel.rsplit("/", 1)[-1]
    try:
        return safe_open.open_file(parent, name, hard_links=hard_links)
    except safe_open.Link:
        raise Unreadable(rel, "a symbolic link (never followed)") from None
    except safe_open.Odd as err:
        raise Unreadable(rel, err.reason) from None
    except FileNotFoundError:
        raise Unreadable(rel, "missing") from None
    except OSError as err:
        raise Unreadable(rel, err.strerror or "cannot open") from None


def walk(root: Path, limits: Limits = LIMITS, enter: Callable[[str], bool] | None = None) -> Walk:
    """Every entry below `root` (links listed, never followed) and what was skipped."""
    walker = TreeWalk(root, limits, enter)
    nodes = [node for node, _ in walker]
    return Walk(nodes, walker.skipped)


def _parts(rel: str) -> list[str]:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Unreadable(rel, "not a path inside the folder")
    return parts


def open_file(root: Path, rel: str, hard_links: bool = False) -> int:
    """A read descriptor for regular file `root/rel`, reached without following any link
    on the way and never blocking; Unreadable says why not."""
    parts = _parts(rel)
    try:
        with safe_open.folder(Path(root), parts[:-1]) as parent:
            return _open_in(parent, rel, hard_links)
    except safe_open.Link:
        raise Unreadable(rel, "a symbolic link on the way (never followed)") from None
    except FileNotFoundError:
        raise Unreadable(rel, "missing") from None
    except OSError as err:
        raise Unreadable(rel, err.strerror or "cannot open") from None


def read_file(root: Path, rel: str, max_bytes: int, hard_links: bool = False) -> bytes:
    """The bytes of regular file `root/rel`, at most `max_bytes` (else Unreadable).
    Files with several hard links are refused unless `hard_links` (they may alias a host file)."""
    fd = open_file(root, rel, hard_links)
    try:
        return TreeWalk(root, Limits(bytes=max_bytes))._take(fd, rel, max_bytes)
    finally:
        os.close(fd)


def read_head(root: Path, rel: str, max_bytes: int) -> bytes:
    """The first `max_bytes` of regular file `root/rel` (for previews)."""
    fd = open_file(root, rel, hard_links=True)
    try:
        return safe_open.read_all(fd, max_bytes)
    finally:
        os.close(fd)


def write_file(folder: Path, rel: str, data: bytes) -> None:
    """Write `data` to `folder/rel` (folders on the way made), refusing a link, FIFO or
    hard-linked file planted there and a link among the folders on the way."""
    try:
        with safe_open.file(Path(folder), _parts(rel), write=True) as fd:
            safe_open.replace_content(fd, data)
    except safe_open.Link:
        raise Unreadable(rel, "a symbolic link is in the way (not written through)") from None
    except safe_open.Odd as err:
        raise Unreadable(rel, f"{err.reason} is in the way (not written)") from None


def remove_tree(root: Path, rel: str) -> None:
    """Delete `root/rel` (a file, link or folder of any depth) without following links
    and without recursion; the folders on the way to it must not be links."""
    parts = _parts(rel)
    try:
        with safe_open.folder(Path(root), parts[:-1]) as parent:
            _remove_in(parent, parts[-1])
    except (OSError, safe_open.Link):
        return  # gone already, or not ours to follow


def _remove_in(parent: int, name: str) -> None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    stack = [(parent, name, os.open(name, safe_open.DIR_FLAGS, dir_fd=parent))]
    try:
        while stack:
            _, _, fd = stack[-1]
            sub = None
            with os.scandir(fd) as found:
                for entry in found:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                stack.append((fd, sub, os.open(sub, safe_open.DIR_FLAGS, dir_fd=fd)))
                continue
            above, own, _ = stack.pop()
            os.close(fd)
            os.rmdir(own, dir_fd=above)
    finally:
        for _, _, fd in stack:
            os.close(fd)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth_ok(data: bytes, max_depth: int = JSON_DEPTH) -> bool:
    """Whether no array or object in the JSON text nests deeper than `max_depth`."""
    depth = 0
    for byte in _STRING.sub(b"", data).translate(None, _NOT_BRACKET):
        depth += 1 if byte in (0x5B, 0x7B) else -1
        if depth > max_depth:
            return False
    return True


def loads_json(data: bytes, max_depth: int = JSON_DEPTH) -> Any:
    """Parse untrusted JSON: ValueError when it nests deeper than `max_depth` or is invalid."""
    if not json_depth_ok(data, max_depth):
        raise ValueError(f"nested deeper than {max_depth} levels")
    return json.loads(data)
