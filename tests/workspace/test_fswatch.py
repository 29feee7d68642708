"""The observer process on its own: bounded by construction whatever tree is built under it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from aiscientist.workspace.fswatch import FileChange, ObserverProcess, WatchSpec
from aiscientist.workspace.inotify import MAX_DEPTH


def _until(check: Callable[[], bool], what: str, within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _chain(top: Path, levels: int) -> None:
    """`levels` nested folders d/d/d/... under `top`, each made relative to the one before it."""
    here = os.open(top, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=here)
        inner = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = inner
    os.close(here)


def test_a_chain_deeper_than_the_limit_is_reported_lost_and_the_top_is_still_watched(tmp_path: Path) -> None:
    (tmp_path / "submission").mkdir()
    seen: list[FileChange] = []
    lost: list[tuple[str, str]] = []
    observer = ObserverProcess(WatchSpec(str(tmp_path), (), (), {}), seen.extend, lambda f, why: lost.append((f, why)))
    observer.start()
    try:
        _chain(tmp_path / "submission", 3 * MAX_DEPTH)
        (tmp_path / "submission" / "late.txt").write_text("seen\n")
        _until(lambda: any(c.rel == "submission/late.txt" for c in seen), "a write at the top was not seen")
        deepest = "submission/" + "/".join(["d"] * (MAX_DEPTH - 1))
        _until(lambda: bool(lost), "the folder past the limit was not reported")
        assert lost == [(deepest + "/d", f"deeper than {MAX_DEPTH} folders below the run folder: not watched")]
        assert any(c.rel == deepest and c.kind == "created" for c in seen)  # the last watched level still reports
        (tmp_path / deepest / "inside.txt").write_text("x\n")
        _until(lambda: any(c.rel == deepest + "/inside.txt" for c in seen), "the deepest watched folder is blind")
    finally:
        observer.stop()
    assert not any(c.rel.count("/") > MAX_DEPTH for c in seen)


def test_new_folders_filled_at_once_moved_and_unwatched(tmp_path: Path) -> None:
    """What was made in a folder before its watch existed is listed; a moved folder reports under
    its new name; an unwatched top-level folder and ignored paths report nothing."""
    for folder in ("logs", "state"):
        (tmp_path / folder).mkdir()
    seen: list[FileChange] = []
    observer = ObserverProcess(WatchSpec(str(tmp_path), ("state",), ("logs/quiet",), {}), seen.extend)
    observer.start()
    try:
        made = tmp_path / "staging"
        (made / "a" / "b").mkdir(parents=True)
        (made / "a" / "b" / "f.txt").write_text("x\n")
        os.rename(made, tmp_path / "logs" / "got")  # moved in from a folder made after the start: watched as new
        _until(lambda: any(c.rel == "logs/got/a/b/f.txt" for c in seen), "the moved-in tree was not listed")
        os.rename(tmp_path / "logs" / "got", tmp_path / "logs" / "kept")
        (tmp_path / "logs" / "kept" / "a" / "b" / "g.txt").write_text("y\n")
        (tmp_path / "state" / "s.txt").write_text("z\n")
        (tmp_path / "logs" / "quiet.txt").write_text("z\n")
        _until(lambda: any(c.rel == "logs/kept/a/b/g.txt" for c in seen), "a folder moved inside went blind")
        time.sleep(0.2)
    finally:
        observer.stop()
    rels = {c.rel for c in seen}
    assert {"logs/got", "logs/kept"} <= rels and {c.kind for c in seen if c.rel == "logs/kept"} == {"moved"}
    assert not any(r.startswith(("state/", "logs/quiet")) for r in rels)
