"""The one way the host opens, reads, writes, walks and removes what untrusted code wrote.

Everything a sandbox or an agent may have written (a submission, a run folder handed over,
a reproduction's copy, an archive) is reached only through this package, one operation
with one signature each:

    open_file(root, rel)                 a read descriptor       read_file(root, rel, max_bytes)  its bytes
    read_head(root, rel, max_bytes)      its first bytes          write_file(root, rel, data)      replaced content
    remove_tree(root, rel)               deleted, iteratively     walk(root) / TreeWalk(root)      every entry, bounded
    scratch_folder(prefix, in_memory)    a temporary folder a sandbox may fill, removed iteratively at exit
    folder(root, parts) / file(root, parts) / entry(root, parts)  descriptors for work on open folders and files
    entries(dir_fd), read_all(fd, limit), replace_content(fd, data), open_at(dir_fd, name)  on those descriptors
    loads_json(data)                     JSON with a nesting limit

No link is ever followed (every name is opened relative to its folder's descriptor with
O_NOFOLLOW), no FIFO or device is opened (O_NONBLOCK, fstat on the open descriptor), no
walk or removal recurses, and every read has a byte limit. A refusal is an `Unreadable`
(`Link` and `Odd` are the two kinds the descriptor layer tells apart).

Names are `str` as the OS gives them: bytes that are not UTF-8 are kept with
`surrogateescape` (`os.fsencode(rel)` gives the original bytes back); print them with
`aiscientist.util.text.clean`, never raw.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiscientist.util.untrusted.descriptors import (
    DIR_FLAGS,
    Kind,
    Link,
    Odd,
    Unreadable,
    entries,
    entry,
    file,
    folder,
    open_at,
    read_all,
    replace_content,
)
from aiscientist.util.untrusted.walk import LIMITS, Limits, Skipped, TreeEntry, TreeWalk, Walk, open_in, walk

JSON_DEPTH = 64
# a tmpfs where the host has one: folders and files made there cost no disk journal (each costs 0.2 ms and up on ext4)
MEMORY_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None


def _parts(rel: str) -> list[str]:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Unreadable(rel, "not a path inside the folder")
    return parts


def open_file(root: Path, rel: str, hard_links: bool = False) -> int:
    """A read descriptor for regular file `root/rel`, reached without following any link
    on the way and never blocking; Unreadable says why not. Files with several hard links
    are refused unless `hard_links` (they may alias a host file)."""
    parts = _parts(rel)
    try:
        with folder(Path(root), parts[:-1]) as parent:
            return open_in(parent, rel, hard_links)
    except Link:
        raise Unreadable(rel, "a symbolic link on the way (never followed)") from None
    except FileNotFoundError:
        raise Unreadable(rel, "missing") from None
    except OSError as err:
        raise Unreadable(rel, err.strerror or "cannot open") from None


def read_file(root: Path, rel: str, max_bytes: int, hard_links: bool = False) -> bytes:
    """The bytes of regular file `root/rel`, at most `max_bytes` (else Unreadable)."""
    fd = open_file(root, rel, hard_links)
    try:
        return TreeWalk(root, Limits(bytes=max_bytes)).take(fd, rel, max_bytes)
    finally:
        os.close(fd)


def read_head(root: Path, rel: str, max_bytes: int) -> bytes:
    """The first `max_bytes` of regular file `root/rel` (for previews and diffs)."""
    fd = open_file(root, rel, hard_links=True)
    try:
        return read_all(fd, max_bytes)
    finally:
        os.close(fd)


def write_file(root: Path, rel: str, data: bytes) -> None:
    """Write `data` to `root/rel` (folders on the way made), refusing a link, FIFO or
    hard-linked file planted there and a link among the folders on the way."""
    try:
        with file(Path(root), _parts(rel), write=True) as fd:
            replace_content(fd, data)
    except Link:
        raise Unreadable(rel, "a symbolic link is in the way (not written through)") from None
    except Odd as err:
        raise Unreadable(rel, f"{err.reason} is in the way (not written)") from None


def remove_tree(root: Path, rel: str) -> None:
    """Delete `root/rel` (a file, link or folder of any depth) without following links
    and without recursion; the folders on the way to it must not be links."""
    parts = _parts(rel)
    try:
        with folder(Path(root), parts[:-1]) as parent:
            _remove_in(parent, parts[-1])
    except (OSError, Unreadable):
        return  # gone already, or not ours to follow


def _remove_in(parent: int, name: str) -> None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    stack = [(parent, name, _open_own(parent, name))]
    try:
        while stack:
            _, _, fd = stack[-1]
            sub = None
            with os.scandir(fd) as found:
                for item in found:
                    if item.is_dir(follow_symlinks=False):
                        sub = item.name
                        break
                    os.unlink(item.name, dir_fd=fd)
            if sub is not None:
                stack.append((fd, sub, _open_own(fd, sub)))
                continue
            above, own, _ = stack.pop()
            os.close(fd)
            os.rmdir(own, dir_fd=above)
    finally:
        for _, _, fd in stack:
            os.close(fd)


def _open_own(parent: int, name: str) -> int:
    """A folder to empty, made writable first (a sandbox may have left it read-only or unreadable)."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent)  # only once every process that wrote it is dead
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    os.fchmod(fd, 0o700)
    return fd


@contextmanager
def scratch_folder(prefix: str, in_memory: bool = False) -> Iterator[Path]:
    """A fresh temporary folder, removed with `remove_tree` however deep or linked what a
    sandbox left in it (tempfile's cleanup recurses and dies on a deep tree); in `MEMORY_DIR`
    when `in_memory` and the host has one, for what is known to be small."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=MEMORY_DIR if in_memory else None))
    try:
        yield path
    finally:
        remove_tree(path.parent, path.name)


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


__all__ = [
    "DIR_FLAGS",
    "JSON_DEPTH",
    "LIMITS",
    "MEMORY_DIR",
    "Kind",
    "Limits",
    "Link",
    "Odd",
    "Skipped",
    "TreeEntry",
    "TreeWalk",
    "Unreadable",
    "Walk",
    "entries",
    "entry",
    "file",
    "folder",
    "json_depth_ok",
    "loads_json",
    "open_at",
    "open_file",
    "read_all",
    "read_file",
    "read_head",
    "remove_tree",
    "replace_content",
    "scratch_folder",
    "walk",
    "write_file",
]
