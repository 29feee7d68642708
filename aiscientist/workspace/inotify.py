"""A bounded recursive watch of a folder tree on inotify, for the observer process (`fswatch`).

Every folder has a watch of its own, kept in a dict watch descriptor -> path, so an event costs
O(1) whatever the depth. A new folder is watched first and then listed once (`util/untrusted`'s
iterative, bounded walk: no link followed), for what was made in it before its watch existed. It
is bounded by construction: folders deeper than MAX_DEPTH below the root, watches past MAX_WATCHES,
names past SCAN_ENTRIES in one listing and what the kernel refuses (its limits) are not watched,
and each such folder is reported once in `lost` with the reason, so whatever tree untrusted code
builds, a change near the top is still seen at once. A folder is watched through its open
descriptor (/proc/self/fd/N): no path length limit, and no link swapped in is ever followed.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from inotify_simple import INotify, flags

from aiscientist.util import untrusted

MAX_DEPTH = 64  # folders below the root that are watched
MAX_WATCHES = 16_384  # watches in all (the kernel's own per-user limit may be lower: then it refuses)
SCAN_ENTRIES = 100_000  # names listed when one folder's watch begins
MAX_LOST = 100  # folders reported as not watched; past it one last report says so
CHANGED = flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.CLOSE_WRITE
CHANGED |= flags.EXCL_UNLINK | flags.ONLYDIR
EVERY_WRITE = CHANGED | flags.MODIFY | flags.ATTRIB
GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # removed, or swapped for a file or a link, meanwhile

Found = tuple[str, str, bool]  # kind (created, modified, closed, deleted, moved), path below the root, a folder


def depth(rel: str) -> int:
    return rel.count("/") + 1 if rel else 0


def _under(rel: str, folder: str) -> bool:
    return rel == folder or rel.startswith(folder + "/")


class WatchTree:
    """The watches over `root`; `mask(rel)` gives a folder's inotify mask, None for a folder not watched."""

    def __init__(self, root: str, mask: Callable[[str], int | None]):
        self.root, self.mask = root, mask
        self.inotify = INotify()
        self.paths: dict[int, str] = {}  # watch descriptor -> folder below the root ("" the root)
        self.lost: list[tuple[str, str]] = []  # (folder, why) not yet taken
        self._lost_seen: set[str] = set()
        self._moving: dict[int, str] = {}  # a folder moved away in this read, by its cookie
        self._found: list[Found] = []
        try:
            with untrusted.folder(Path(root), []) as fd:
                self.paths[self.inotify.add_watch(f"/proc/self/fd/{fd}", self.mask("") or CHANGED)] = ""
        except OSError:
            self.inotify.close()
            raise
        self._watch_tree("", report=False)

    def fileno(self) -> int:
        return self.inotify.fileno()

    def close(self) -> None:
        self.inotify.close()

    def read(self) -> list[Found]:
        """What changed, from the events queued now (none: an empty list, at once)."""
        for event in self.inotify.read(timeout=0):
            self._event(event.wd, event.mask, event.cookie, event.name)
        for folder in self._moving.values():  # moved out of the tree (or its pair comes in the next read)
            self._drop(folder)
        self._moving.clear()
        found, self._found = self._found, []
        return found

    def _event(self, wd: int, mask: int, cookie: int, name: str) -> None:
        if mask & flags.Q_OVERFLOW:
            self._lose(".", "the kernel's event queue overflowed: some changes were not seen")
            return
        if mask & flags.IGNORED:  # the folder is gone, or its watch was removed
            self.paths.pop(wd, None)
            return
        here = self.paths.get(wd)
        if here is None or not name:  # a watch removed meanwhile, or an event on the folder itself
            return
        rel = f"{here}/{name}" if here else name
        folder = bool(mask & flags.ISDIR)
        if mask & flags.CREATE:
            self._found.append(("created", rel, folder))
            if folder:
                self._watch_tree(rel, report=True)
        elif mask & flags.MOVED_FROM:
            self._found.append(("moved", rel, folder))
            if folder:
                self._moving[cookie] = rel
        elif mask & flags.MOVED_TO:
            self._found.append(("moved", rel, folder))
            if folder:
                self._moved_in(self._moving.pop(cookie, None), rel)
        elif mask & flags.DELETE:
            self._found.append(("deleted", rel, folder))
        elif mask & flags.CLOSE_WRITE:
            self._found.append(("closed", rel, folder))
        elif not folder:  # MODIFY, ATTRIB
            self._found.append(("modified", rel, folder))

    def _moved_in(self, old: str | None, rel: str) -> None:
        """A folder moved within its top-level folder keeps its watches under the new path;
        one from elsewhere is watched as new."""
        if old is None or old.split("/", 1)[0] != rel.split("/", 1)[0]:
            if old is not None:
                self._drop(old)
            self._watch_tree(rel, report=True)
            return
        for wd, folder in list(self.paths.items()):
            if _under(folder, old):
                moved = rel + folder[len(old) :]
                if depth(moved) > MAX_DEPTH:
                    self._unwatch(wd)
                    self._lose(moved, f"moved deeper than {MAX_DEPTH} folders below the run folder: not watched")
                else:
                    self.paths[wd] = moved

    def _drop(self, old: str) -> None:
        for wd, folder in list(self.paths.items()):
            if _under(folder, old):
                self._unwatch(wd)

    def _unwatch(self, wd: int) -> None:
        del self.paths[wd]
        try:
            self.inotify.rm_watch(wd)
        except OSError:  # gone already
            pass

    def _watch_tree(self, rel: str, report: bool) -> None:
        """Watch folder `rel` and, listed once, every folder below it not watched yet (each new entry
        reported as created when `report`)."""
        parts = rel.split("/") if rel else []
        try:
            with untrusted.folder(Path(self.root), parts) as fd:
                if rel and not self._watch(fd, rel):
                    return
                fresh = {""}  # folders newly watched (only those are listed)
                walk = untrusted.TreeWalk(
                    fd,
                    untrusted.Limits(depth=MAX_DEPTH + 1, entries=SCAN_ENTRIES, path_bytes=1 << 20),
                    enter=lambda inside: inside in fresh,
                )
                for node, parent in walk:
                    path = f"{rel}/{node.rel}" if rel else node.rel
                    if report:
                        self._found.append(("created", path, node.kind == "dir"))
                    if node.kind == "dir" and self._watch_in(parent, node.rel.rsplit("/", 1)[-1], path):
                        fresh.add(node.rel)
                for skipped in walk.skipped:
                    self._lose(f"{rel}/{skipped.rel}" if rel else skipped.rel, skipped.reason)
        except untrusted.Unreadable:  # a link on the way: nothing of the tree to watch
            return
        except OSError as err:
            if err.errno not in GONE:
                self._lose(rel or ".", f"cannot open the folder: {err.strerror}")

    def _watch_in(self, parent: int, name: str, rel: str) -> bool:
        try:
            fd = os.open(name, untrusted.DIR_FLAGS, dir_fd=parent)
        except OSError as err:
            if err.errno not in GONE:
                self._lose(rel, f"cannot open the folder: {err.strerror}")
            return False
        try:
            return self._watch(fd, rel)
        finally:
            os.close(fd)

    def _watch(self, fd: int, rel: str) -> bool:
        """Watch open folder `fd` as `rel`: whether it is newly watched."""
        mask = self.mask(rel)
        if mask is None:
            return False
        if depth(rel) > MAX_DEPTH:
            self._lose(rel, f"deeper than {MAX_DEPTH} folders below the run folder: not watched")
            return False
        try:
            wd = self.inotify.add_watch(f"/proc/self/fd/{fd}", mask)
        except OSError as err:  # e.g. ENOSPC: the kernel's watch limit for this user
            self._lose(rel, f"the kernel refused a watch: {err.strerror}")
            return False
        if self.paths.get(wd) == rel:
            return False
        if wd not in self.paths and len(self.paths) >= MAX_WATCHES:
            self.inotify.rm_watch(wd)
            self._lose(rel, f"watch limit ({MAX_WATCHES} folders) reached: not watched")
            return False
        self.paths[wd] = rel
        return True

    def _lose(self, folder: str, why: str) -> None:
        if folder in self._lost_seen or len(self._lost_seen) > MAX_LOST:
            return
        self._lost_seen.add(folder)
        if len(self._lost_seen) > MAX_LOST:
            folder, why = ".", f"more than {MAX_LOST} folders not watched: no more are reported"
        self.lost.append((folder, why[:300]))
