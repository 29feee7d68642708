"""The member-by-member tar unpacker on real archives, hostile and honest."""

from __future__ import annotations

import io
import os
import tarfile
import time
from pathlib import Path

import pytest

from aiscientist.util.archive import ArchiveError, ArchiveLimits, unpack


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def test_an_honest_archive_unpacks_with_links_inside_and_modes(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "ok.tar",
        [
            _special("sub", tarfile.DIRTYPE),
            _file("sub/run.sh", b"echo hi\n", 0o755),
            _file("sub/data.txt", b"data"),
            _special("sub/alias.txt", tarfile.SYMTYPE, "data.txt"),
            _special("sub/copy.txt", tarfile.LNKTYPE, "sub/data.txt"),
            _file("n\udcffame.txt", b"odd name"),
        ],
    )
    written = unpack(archive, tmp_path / "out")
    out = tmp_path / "out"
    assert written == ["sub", "sub/run.sh", "sub/data.txt", "sub/alias.txt", "sub/copy.txt", "n\udcffame.txt"]
    assert (out / "sub" / "alias.txt").is_symlink() and (out / "sub" / "alias.txt").read_text() == "data"
    assert (out / "sub" / "copy.txt").read_text() == "data" and os.stat(out / "sub" / "copy.txt").st_nlink == 1
    assert os.stat(out / "sub" / "run.sh").st_mode & 0o111
    assert (out / os.fsdecode(b"n\xffame.txt")).read_bytes() == b"odd name"


HOSTILE = {
    "absolute path": ([_file("/etc/evil")], "an absolute path"),
    "dot-dot": ([_file("sub/../../evil")], "'..'"),
    "symlink out": ([_special("l", tarfile.SYMTYPE, "/etc/passwd")], "symbolic link that leaves"),
    "symlink up": ([_special("a/l", tarfile.SYMTYPE, "../../x")], "symbolic link that leaves"),
    "write through an inner link": (
        [_special("d", tarfile.SYMTYPE, "."), _file("d/x")],
        "below a member that is not a folder",
    ),
    "hard link out": ([_special("h", tarfile.LNKTYPE, "/etc/shadow")], "hard link"),
    "hard link to a later member": ([_special("h", tarfile.LNKTYPE, "later"), _file("later")], "hard link"),
    "fifo": ([_special("f", tarfile.FIFOTYPE)], "a device, FIFO"),
    "device": ([_special("c", tarfile.CHRTYPE)], "a device, FIFO"),
    "twice": ([_file("x", b"1"), _file("x", b"2")], "appears twice"),
    # each link is inside on its own; resolved through `L`, `x` is the folder's parent
    "symlink out through another link": (
        [_special("a/b/c/L", tarfile.SYMTYPE, "../../.."), _special("x", tarfile.SYMTYPE, "a/b/c/L/..")],
        "leaves the folder through other links",
    ),
    "symlink loop": (
        [_special("p", tarfile.SYMTYPE, "q/x"), _special("q", tarfile.SYMTYPE, "p/y")],
        "leaves the folder through other links",
    ),
    "too deep": ([_file("d/" * 200 + "f")], "deeper than 128"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_members_are_refused_before_anything_is_written(tmp_path: Path, case: str) -> None:
    members, reason = HOSTILE[case]
    archive = _tar(tmp_path / "bad.tar", members)
    with pytest.raises(ArchiveError, match=reason):
        unpack(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "evil").exists()


def test_a_tar_bomb_is_refused_by_its_expansion_ratio(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=9) as tar:
        info = tarfile.TarInfo("zeros")
        info.size = 300 << 20
        tar.addfile(info, _Zeros(info.size))
    assert archive.stat().st_size < 400_000  # ~299 KB
    started = time.monotonic()
    with pytest.raises(ArchiveError, match=r"more than 100 times its size \(a tar bomb\?\)"):
        unpack(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists() and time.monotonic() - started < 10


def test_hard_links_count_their_bytes_again(tmp_path: Path) -> None:
    """Each hard link is written as a copy: 1 MB linked 10 times is 11 MB, not 1 MB."""
    members = [_file("f", b"\0" * (1 << 20))] + [_special(f"h{i}", tarfile.LNKTYPE, "f") for i in range(10)]
    archive = _tar(tmp_path / "links.tar.gz", members, "w:gz")
    with pytest.raises(ArchiveError, match="a tar bomb"):
        unpack(archive, tmp_path / "out", ArchiveLimits(ratio_floor=4 << 20))
    assert not (tmp_path / "out").exists()


def test_member_count_and_total_size_are_capped(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "many.tar", [_file(f"f{i}") for i in range(20)])
    with pytest.raises(ArchiveError, match="more than 10 members"):
        unpack(archive, tmp_path / "out", ArchiveLimits(members=10))
    with pytest.raises(ArchiveError, match="unpacks to more than 5 bytes"):
        unpack(archive, tmp_path / "out", ArchiveLimits(total_bytes=5))


def test_not_a_tar_archive_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.tar").write_bytes(b"not an archive at all" * 100)
    with pytest.raises(ArchiveError, match="not a readable tar archive"):
        unpack(tmp_path / "x.tar", tmp_path / "out")


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def test_a_truncated_or_linked_archive_is_a_clear_error(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "whole.tar.gz", [_file("big.bin", os.urandom(100_000))], "w:gz")
    whole = archive.read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ArchiveError, match="not a readable tar archive"):  # was an EOFError from gzip
        unpack(tmp_path / "cut.tar.gz", tmp_path / "out")
    (tmp_path / "link.tar.gz").symlink_to(archive)
    with pytest.raises(ArchiveError, match="a symbolic link"):  # the archive itself is never followed
        unpack(tmp_path / "link.tar.gz", tmp_path / "out")
