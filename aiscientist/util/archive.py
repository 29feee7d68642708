"""Unpack an untrusted tar archive member by member, without tarfile's extraction.

`tarfile` is used only to list members and read their bytes; whether a member may be
written, and how, is decided here, whatever Python version runs (the extraction
filters of 3.11.7 predate the fix for CVE-2025-4517). Every member is checked before
anything is written: no absolute path, no `..`, no device, FIFO or other special
member, no symbolic or hard link that leaves the folder, no name twice. A symbolic
link is resolved the way the file system will, through the archive's other links
(`L -> ../../..` placed deep, then `x -> a/b/c/L/..`, stays inside lexically but not
on disk). The member count, path depth and length, the total size (a hard link
counts its target's bytes again: it is written as a copy) and the expansion over
the archive's own size are capped (a 299 KB archive that unpacks to 300 MB is refused). Files are then written under a
fresh folder with O_NOFOLLOW|O_EXCL, each folder on the way opened without following
links, so no member can write through another.
"""

from __future__ import annotations

import lzma
import os
import posixpath
import tarfile
import zlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from aiscientist.util import untrusted
from aiscientist.util.text import clean

CHUNK = 1 << 20
NAME_MAX = 255  # bytes in one path component (Linux)
PATH_MAX = 4096  # bytes in a member's path or a link's target
DEPTH_MAX = 128  # folders in a member's path (the depth the tree walker enters)
LINK_STEPS = 4096  # path components one link's resolution may visit (links through links)


class ArchiveError(ValueError):
    """The archive may not be unpacked; the message names the member and the reason."""


@dataclass(frozen=True)
class ArchiveLimits:
    members: int = 100_000
    total_bytes: int = 4 << 30
    ratio: float = 100.0  # unpacked size / archive size, checked once past `ratio_floor`
    ratio_floor: int = 32 << 20


def _member_parts(member: tarfile.TarInfo) -> list[str]:
    name = member.name
    if name.startswith("/") or posixpath.isabs(name):
        raise ArchiveError(f"member {clean(name)!r}: an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"member {clean(name)!r}: a path with '..' (it would leave the folder)")
    if "\x00" in name:
        raise ArchiveError(f"member {clean(name)!r}: a NUL byte in the name")
    if any(len(os.fsencode(part)) > NAME_MAX for part in parts):
        raise ArchiveError(f"member {clean(name, 300)!r}: a name longer than {NAME_MAX} bytes")
    if len(os.fsencode(name)) > PATH_MAX or len(parts) > DEPTH_MAX:
        raise ArchiveError(
            f"member {clean(name, 300)!r}: a path deeper than {DEPTH_MAX} or longer than {PATH_MAX} bytes"
        )
    return parts


def _link_inside(parts: list[str], target: str, hard: bool) -> bool:
    """Whether a link at `parts` to `target` stays inside the folder (lexically)."""
    if not target or target.startswith("/") or len(os.fsencode(target)) > PATH_MAX:
        return False
    base = [] if hard else parts[:-1]  # a hard link's target is relative to the archive's root
    resolved = posixpath.normpath(posixpath.join(*base, target) if base else target)
    return resolved != ".." and not resolved.startswith("../")


def _resolves_inside(rel: str, links: dict[str, str]) -> bool:
    """Whether symbolic link `rel` stays inside the folder when resolved as the kernel
    will, following the archive's other links (`links`: path -> target) on the way;
    a loop or a resolution longer than LINK_STEPS components counts as leaving."""
    where = rel.split("/")[:-1]
    pending = deque(links[rel].split("/"))
    steps = 0
    while pending:
        steps += 1
        if steps > LINK_STEPS:
            return False
        part = pending.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if not where:
                return False
            where.pop()
            continue
        where.append(part)
        target = links.get("/".join(where))
        if target is not None:
            if target.startswith("/"):
                return False
            where.pop()
            pending.extendleft(reversed(target.split("/")))
    return True


def check(tar: tarfile.TarFile, archive_size: int, limits: ArchiveLimits = ArchiveLimits()) -> list[tarfile.TarInfo]:
    """The members of `tar` in order, once every one of them passed the checks."""
    archive_size = max(archive_size, 1)
    members: list[tarfile.TarInfo] = []
    seen: dict[str, str] = {}
    sizes: dict[str, int] = {}
    links: dict[str, str] = {}
    total = 0
    for member in tar:
        if len(members) >= limits.members:
            raise ArchiveError(f"more than {limits.members} members")
        parts = _member_parts(member)
        if not parts:
            continue  # the archive's own root folder
        rel = "/".join(parts)
        for end in range(1, len(parts)):
            if seen.get("/".join(parts[:end]), "dir") != "dir":
                raise ArchiveError(f"member {clean(rel)!r}: below a member that is not a folder")
        kind = _kind(member, parts, seen)
        if rel in seen and not (kind == seen[rel] == "dir"):
            raise ArchiveError(f"member {clean(rel)!r}: appears twice")
        seen[rel] = kind
        if kind == "file":
            sizes[rel] = member.size
        elif kind == "link":
            links[rel] = member.linkname
        total += sizes[rel] if kind == "file" else sizes[_hard_target(member)] if kind == "hardlink" else 0
        if total > limits.total_bytes:
            raise ArchiveError(f"unpacks to more than {limits.total_bytes} bytes")
        if total > limits.ratio_floor and total / archive_size > limits.ratio:
            raise ArchiveError(
                f"unpacks to {total} bytes from {archive_size}, more than {limits.ratio:g} times its size (a tar bomb?)"
            )
        members.append(member)
    for rel, target in links.items():
        if not _resolves_inside(rel, links):
            raise ArchiveError(
                f"member {clean(rel)!r}: a symbolic link that leaves the folder through other links ({clean(target)})"
            )
    return members


def _hard_target(member: tarfile.TarInfo) -> str:
    return "/".join(p for p in member.linkname.split("/") if p not in ("", "."))


def _kind(member: tarfile.TarInfo, parts: list[str], seen: dict[str, str]) -> str:
    name = clean("/".join(parts))
    if member.isdir():
        return "dir"
    if member.isreg():
        return "file"
    if member.issym():
        if not _link_inside(parts, member.linkname, hard=False):
            raise ArchiveError(f"member {name!r}: a symbolic link that leaves the folder ({clean(member.linkname)})")
        return "link"
    if member.islnk():
        target = _hard_target(member)
        if not _link_inside(parts, member.linkname, hard=True) or seen.get(target) != "file":
            raise ArchiveError(
                f"member {name!r}: a hard link to {clean(member.linkname)!r}, not an earlier file of the archive"
            )
        return "hardlink"
    raise ArchiveError(f"member {name!r}: a device, FIFO or other special file")


def unpack(archive: Path, dest: Path, limits: ArchiveLimits = ArchiveLimits()) -> list[str]:
    """Unpack `archive` into `dest`, a folder made here (it must not exist); returns the
    relative paths written. The archive is opened once, without following a link, and
    must be a regular file with one link; every member is checked before anything is
    written. Raises ArchiveError naming the cause (a member, a damaged or truncated
    archive), also when the bytes actually read exceed the declared sizes."""
    archive, dest = Path(archive), Path(dest)
    try:
        fd = untrusted.open_file(archive.parent, archive.name)
    except untrusted.Unreadable as err:
        raise ArchiveError(f"{clean(archive.name)}: {err.reason}") from None
    written: list[str] = []
    budget = limits.total_bytes
    with open(fd, "rb") as handle:
        try:
            with tarfile.open(fileobj=handle, mode="r:*") as tar:
                members = check(tar, os.fstat(fd).st_size, limits)
                os.mkdir(dest, 0o755)
                for member in members:
                    parts = _member_parts(member)
                    if parts:
                        budget -= _write(tar, member, dest, parts, budget)
                        written.append("/".join(parts))
        except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as err:
            raise ArchiveError(f"not a readable tar archive: {clean(err)}") from None
        except OSError as err:  # a damaged compressed stream (gzip, bz2), or `dest` not makeable
            raise ArchiveError(f"cannot unpack: {clean(err)}") from None
    return written


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, parts: list[str], budget: int) -> int:
    """Write one member; returns the bytes written."""
    try:
        return _write_member(tar, member, dest, parts, budget)
    except (untrusted.Unreadable, OSError) as err:
        raise ArchiveError(f"member {clean('/'.join(parts))!r}: cannot be written safely ({clean(err)})") from None


def _write_member(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, parts: list[str], budget: int) -> int:
    if member.isdir():
        with untrusted.folder(dest, parts, create=True):
            return 0
    with untrusted.folder(dest, parts[:-1], create=True) as parent:
        if member.issym():
            os.symlink(member.linkname, parts[-1], dir_fd=parent)
            return 0
        if member.islnk():  # a copy of the earlier file, never a real hard link
            target = _hard_target(member)
            data = untrusted.read_file(dest, target, budget, hard_links=True)
            return _create(parent, parts[-1], [data], member.mode)
        source = tar.extractfile(member)
        if source is None:
            raise ArchiveError(f"member {clean(member.name)!r}: no content")
        with source:
            chunks = iter(lambda: source.read(CHUNK), b"")
            return _create(parent, parts[-1], chunks, member.mode, min(budget, member.size))


def _create(parent: int, name: str, chunks: Iterable[bytes], mode: int, cap: int | None = None) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o755 if mode & 0o111 else 0o644, dir_fd=parent)
    size = 0
    try:
        for chunk in chunks:
            size += len(chunk)
            if cap is not None and size > cap:
                raise ArchiveError(f"member {clean(name)!r}: more bytes than its header declares")
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return size
