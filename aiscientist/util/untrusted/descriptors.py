"""Open files and folders under a root without ever following a link, by descriptor.

Every path is walked one name at a time, each folder opened relative to the
descriptor of the one before it with O_NOFOLLOW|O_DIRECTORY, and the final file
with O_NOFOLLOW|O_NONBLOCK (a FIFO cannot block) and checked with fstat on the
open descriptor. What is read or written is therefore the file that was checked:
a process that swaps a folder for a link between a check and a write makes the
open fail instead of redirecting it (finding 5 of issue #18). Import it through
`aiscientist.util.untrusted`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
Kind = Literal["dir", "file"]


class Unreadable(Exception):
    """A path the host will not open: why (a link, not a regular file, too large, missing);
    `rel` names it when known. Every refusal of this package is one."""

    def __init__(self, rel: str, reason: str):
        super().__init__(f"{rel}: {reason}" if rel else reason)
        self.rel, self.reason = rel, reason


class Link(Unreadable):
    """The first `depth` names of the path end at a symbolic link."""

    def __init__(self, depth: int):
        super().__init__("", f"symbolic link at depth {depth}")
        self.depth = depth


class Odd(Unreadable):
    """Not safe to open whatever its name says (a FIFO, a device, a hard link)."""

    def __init__(self, reason: str):
        super().__init__("", reason)


def odd(info: os.stat_result, hard_links: bool = False) -> str | None:
    """Why a file is unsafe: a FIFO or device would block or leak, and a file
    with several hard links may alias a protected file or one outside (allowed
    with `hard_links`, for readers that only look at the content)."""
    if stat.S_ISDIR(info.st_mode):
        return None
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_nlink > 1 and not hard_links:
        return f"the file has {info.st_nlink} hard links (it may alias another file)"
    return None


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _child_dir(dir_fd: int, name: str, depth: int, create: bool) -> int:
    """The descriptor of folder `name` inside `dir_fd`, never through a link."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        except FileExistsError:
            pass  # made meanwhile by someone else: open checks what it is
        return _child_dir(dir_fd, name, depth, create=False)
    except OSError as err:
        info = _lstat(dir_fd, name)
        if err.errno in (errno.ENOTDIR, errno.ELOOP) and info is not None and stat.S_ISLNK(info.st_mode):
            raise Link(depth) from None
        raise


@contextmanager
def folder(root: Path, parts: list[str], create: bool = False) -> Iterator[int]:
    """The descriptor of folder root/parts (made when missing and `create`)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, name in enumerate(parts, 1):
            child = _child_dir(fd, name, depth, create)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def open_at(dir_fd: int, name: str, depth: int = 0, write: bool = False, hard_links: bool = False) -> int:
    """An open regular file (with one link unless `hard_links`) in folder `dir_fd`;
    write opens create it but do not truncate."""
    info = _lstat(dir_fd, name)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise Link(depth)
    reason = odd(info, hard_links) if info is not None else None
    if reason:
        raise Odd(reason)  # never open a device or FIFO at all
    flags = FILE_FLAGS | (os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY)
    try:
        fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise Link(depth) from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        reason = odd(info, hard_links)
        if reason:
            raise Odd(reason)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def file(root: Path, parts: list[str], write: bool = False, hard_links: bool = False) -> Iterator[int]:
    """The descriptor of regular file root/parts; folders on the way are made
    when writing. The caller truncates before writing."""
    with folder(root, parts[:-1], create=write) as parent:
        fd = open_at(parent, parts[-1], len(parts), write, hard_links)
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def entry(root: Path, parts: list[str]) -> Iterator[tuple[int, Kind]]:
    """A folder or regular file at root/parts, opened read-only, with its kind."""
    if not parts:
        with folder(root, []) as fd:
            yield fd, "dir"
        return
    with folder(root, parts[:-1]) as parent:
        info = _lstat(parent, parts[-1])
        if info is not None and stat.S_ISDIR(info.st_mode):
            fd, kind = _child_dir(parent, parts[-1], len(parts), create=False), "dir"
        else:
            fd, kind = open_at(parent, parts[-1], len(parts), write=False), "file"
    try:
        yield fd, kind
    finally:
        os.close(fd)


def entries(dir_fd: int) -> list[tuple[str, Kind]]:
    """The folders and plain files of a folder, sorted; links, FIFOs, devices
    and hard-linked files are left out (the file API cannot open them)."""
    out: list[tuple[str, Kind]] = []
    for name in sorted(os.listdir(dir_fd)):
        info = _lstat(dir_fd, name)
        if info is None or stat.S_ISLNK(info.st_mode) or odd(info):
            continue
        out.append((name, "dir" if stat.S_ISDIR(info.st_mode) else "file"))
    return out


def read_all(fd: int, limit: int) -> bytes:
    """At most `limit` bytes of an open file, from its start."""
    chunks, size = [], 0
    while size < limit:
        chunk = os.pread(fd, min(1 << 20, limit - size), size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def replace_content(fd: int, data: bytes) -> None:
    """Make an open file hold exactly `data`: written over the old bytes, then cut to
    length (emptying the file first would free its blocks, slow on discard-mounted disks)."""
    view, done = memoryview(data), 0
    while done < len(data):
        done += os.pwrite(fd, view[done:], done)
    os.ftruncate(fd, len(data))
