"""A step's disk quota: the bytes and files it may leave in its writable areas.

What counts is what the step left beyond the baseline tree (new files, and task or
editable files it changed). Over `sandbox.disk_mb` or `sandbox.max_files` the step is
invalid with cause "disk quota" and the excess is removed: first everything that is
neither baseline nor editable (outputs, strays), then the largest editable files until
the rest fits. Sizes come from `lstat` on the host; no file is opened or followed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from aiscientist.experiment.integrity import Entry, folders, kept_folders
from aiscientist.task import Task


@dataclass(frozen=True)
class Usage:
    files: int
    bytes: int

    def over(self, task: Task) -> str | None:
        """Why this usage breaks the task's quota, or None."""
        limit = int(task.sandbox.disk_mb * (1 << 20))
        if self.bytes > limit:
            return (
                f"the step left {self.bytes:,} bytes beyond the baseline (sandbox.disk_mb = {task.sandbox.disk_mb:g})"
            )
        if self.files > task.sandbox.max_files:
            return (
                f"the step left {self.files:,} files beyond the baseline (sandbox.max_files = {task.sandbox.max_files})"
            )
        return None


def _size(root: Path, rel: str) -> int:
    try:
        return os.lstat(root / rel).st_size
    except OSError:
        return 0


def left_by_step(root: Path, baseline: dict[str, Entry], tree: dict[str, Entry]) -> dict[str, int]:
    """Every entry the step left that the baseline does not hold as it is, with its size."""
    return {rel: _size(root, rel) for rel, entry in tree.items() if baseline.get(rel) != entry}


def usage(left: dict[str, int]) -> Usage:
    return Usage(files=len(left), bytes=sum(left.values()))


def enforce(
    task: Task, root: Path, baseline: dict[str, Entry], tree: dict[str, Entry], own_folders: Iterable[str] | None = None
) -> tuple[str | None, list[str]]:
    """(why the step is over its quota or None, the paths removed to bring it back). With
    `own_folders` (the baseline's folders) each folder the step made counts as a file; the
    next step's reset removes them."""
    left = left_by_step(root, baseline, tree)
    kept = kept_folders(baseline, own_folders or (), ())
    made = [rel for rel in folders(root) if rel not in kept] if own_folders is not None else []
    reason = Usage(files=len(left) + len(made), bytes=usage(left).bytes).over(task)
    if reason is None:
        return None, []
    removed: list[str] = []
    for rel in sorted(left, key=lambda r: (task.is_editable(r), -left[r])):
        if task.is_editable(rel) and usage(left).over(task) is None:
            break
        try:
            os.unlink(root / rel)  # never follows: a link is removed, not its target
        except OSError:
            continue
        removed.append(rel)
        del left[rel]
    return reason, removed
