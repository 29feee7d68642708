"""The disk quotas: a step's, over the submission (`sandbox.disk_mb`, `sandbox.max_files`), and the
run-wide one over every other area sandboxed code writes (`sandbox.run_disk_mb`, `sandbox.run_max_files`).

What counts is what the step left beyond the baseline tree (new files, and task or
editable files it changed). Over `sandbox.disk_mb` or `sandbox.max_files` the step is
invalid with cause "disk quota" and the excess is removed: first everything that is
neither baseline nor editable (outputs, strays), then the largest editable files until
the rest fits. Sizes come from `lstat` on the host; no file is opened or followed.

The run-wide quota (`enforce_areas`) is checked after every sandbox invocation that may write an
area other than a step's submission: the shell tool (the run folder's areas together,
`run_folder_areas`), each command of the hidden test (its copy), a score invocation (its output
folder), a peer's run (state/agent/), a grading's reproduction (its copy). What those areas hold
beyond what the host laid there is walked with lstat only; over the budget the caller fails with
cause "disk quota" and the excess is removed, largest first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aiscientist.experiment.integrity import Entry, folders, kept_folders
from aiscientist.records.paths import ANALYSIS, PLAN, SCRATCH, SUBMISSION, RunPaths
from aiscientist.task import Task, TaskSandbox
from aiscientist.util import text, untrusted


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


# ---- every other writable area: one run-wide budget (`sandbox.run_disk_mb`, `sandbox.run_max_files`) ----

AREA_LIMITS = untrusted.Limits(bytes=0)  # lstat only: the walk opens no file
CLEAR_ROUNDS = 8  # listings of an over-full folder laid there by right, before giving up on it


@dataclass(frozen=True)
class WritableArea:
    """A folder a sandbox invocation may write, as the host measures it: `laid` names what is
    there by right (what the host laid in it, or the baseline) with its lstat size (None: any
    size), which does not count; `last(rel)` marks what is removed last (the agent's own code)."""

    name: str
    root: Path
    laid: Mapping[str, int | None] = field(default_factory=dict)
    last: Callable[[str], bool] = lambda rel: False

    def shown(self, rel: str) -> str:
        """`rel` for a message (its name cleaned: it is untrusted)."""
        return f"{self.name}{text.name(rel)}" if self.name.endswith("/") else f"{self.name}: {text.name(rel)}"


def laid_out(root: Path) -> dict[str, int | None]:
    """What is in `root` before a sandbox writes it: every entry with its lstat size (folders: any size)."""
    return {n.rel: None if n.kind == "dir" else n.size for n in untrusted.walk(root, AREA_LIMITS).nodes}


def _counts(area: WritableArea, node: untrusted.TreeEntry) -> bool:
    if node.rel not in area.laid:
        return True
    size = area.laid[node.rel]
    return size is not None and node.kind != "dir" and node.size != size


@dataclass(frozen=True)
class _Item:
    """A counted entry: its area, its node, and where its subtree ends in the area's walk order."""

    area: WritableArea
    node: untrusted.TreeEntry
    index: int
    end: int


@dataclass
class _Measure:
    """What the areas hold beyond what is laid in them, and what the walk could not measure."""

    counted: list[_Item]
    unmeasured: list[tuple[WritableArea, str, str]]

    @property
    def usage(self) -> Usage:
        return Usage(
            files=len(self.counted) + len(self.unmeasured),
            bytes=sum(item.node.size for item in self.counted if item.node.kind != "dir"),
        )


def _subtree_ends(nodes: list[untrusted.TreeEntry]) -> list[int]:
    """For each node of a walk (depth first, a folder before what it holds), the index past its subtree."""
    ends = list(range(1, len(nodes) + 1))
    open_folders: list[int] = []
    for i, node in enumerate(nodes):
        while open_folders and not node.rel.startswith(nodes[open_folders[-1]].rel + "/"):
            ends[open_folders.pop()] = i
        if node.kind == "dir":
            open_folders.append(i)
    for i in open_folders:
        ends[i] = len(nodes)
    return ends


def _measure(areas: Sequence[WritableArea]) -> _Measure:
    measure = _Measure([], [])
    for area in areas:
        walk = untrusted.walk(area.root, AREA_LIMITS)
        ends = _subtree_ends(walk.nodes)
        measure.counted += [_Item(area, node, i, ends[i]) for i, node in enumerate(walk.nodes) if _counts(area, node)]
        for skip in walk.skipped:  # a root that cannot be opened (none yet, or a link) holds nothing measured
            if not (skip.rel == "." and skip.reason.startswith("cannot open")):
                measure.unmeasured.append((area, skip.rel, skip.reason))
    return measure


def run_over(settings: TaskSandbox, usage: Usage, where: str) -> str | None:
    """Why `usage` of `where` breaks the run-wide budget, or None."""
    if usage.bytes > int(settings.run_disk_mb * (1 << 20)):
        return f"{where} hold {usage.bytes:,} bytes beyond what the host laid there (sandbox.run_disk_mb = " + (
            f"{settings.run_disk_mb:g})"
        )
    if usage.files > settings.run_max_files:
        return f"{where} hold {usage.files:,} entries beyond what the host laid there (sandbox.run_max_files = " + (
            f"{settings.run_max_files})"
        )
    return None


def enforce_areas(settings: TaskSandbox, areas: Sequence[WritableArea]) -> tuple[str | None, list[str]]:
    """(why `areas` together are over the run-wide budget or None, what was removed to bring them back).
    Measured with lstat only (no link followed, iterative, bounded); what the walk could not measure
    (too deep, too many entries) is over the budget and removed first, then the largest files that are
    not `last`, then the others, then the folders made there, outermost first."""
    where = " and ".join(area.name for area in areas)
    measure = _measure(areas)
    usage = measure.usage
    reason = run_over(settings, usage, where)
    if measure.unmeasured:
        first, rel, why = measure.unmeasured[0]
        reason = reason or f"{first.shown(rel)} not checked ({why}; sandbox.run_max_files = " + (
            f"{settings.run_max_files})"
        )
    if reason is None:
        return None, []
    removed: list[str] = []
    for area, rel, _ in measure.unmeasured:
        _remove_new(area, rel)
        removed.append(area.shown(rel))
    usage = Usage(usage.files - len(measure.unmeasured), usage.bytes)
    by_place = {(id(item.area), item.index): item for item in measure.counted}
    gone: set[tuple[int, int]] = set()
    files = sorted(
        (i for i in measure.counted if i.node.kind != "dir"), key=lambda i: (i.area.last(i.node.rel), -i.node.size)
    )
    made = sorted((i for i in measure.counted if i.node.kind == "dir"), key=lambda i: i.node.rel.count("/"))
    for item in [*files, *made]:
        if run_over(settings, usage, where) is None:
            break
        if (id(item.area), item.index) in gone or item.node.rel in item.area.laid:
            continue
        below = [
            by_place[key]
            for key in ((id(item.area), k) for k in range(item.index, item.end))
            if key in by_place and key not in gone
        ]
        untrusted.remove_tree(item.area.root, item.node.rel)
        gone |= {(id(i.area), i.index) for i in below}
        usage = Usage(usage.files - len(below), usage.bytes - sum(i.node.size for i in below if i.node.kind != "dir"))
        removed.append(item.area.shown(item.node.rel))
    return reason, removed


def _remove_new(area: WritableArea, rel: str) -> None:
    """Remove `rel` (a folder the walk could not measure), or, when it is laid there by right,
    everything in it that is not (listed a walk's worth at a time)."""
    if rel != "." and rel not in area.laid:
        untrusted.remove_tree(area.root, rel)
        return
    prefix = "" if rel == "." else rel + "/"
    for _ in range(CLEAR_ROUNDS):
        try:
            with untrusted.folder(area.root, prefix.rstrip("/").split("/") if prefix else []) as fd:
                walk = untrusted.walk(fd, AREA_LIMITS, enter=lambda _: False)
        except (OSError, untrusted.Unreadable):
            return
        for node in walk.nodes:
            if prefix + node.rel not in area.laid:
                untrusted.remove_tree(area.root, prefix + node.rel)
        if walk.complete:
            return


def run_folder_areas(task: Task, paths: RunPaths, baseline: Iterable[str]) -> list[WritableArea]:
    """The run folder's areas sandboxed code may write (the shell tool's writable areas), measured
    together: scratch/, plan/, paper_analysis/, and submission/ beyond its `baseline` entries (editable
    files removed last; those the baseline holds are the step quota's, checked at the next step)."""
    areas = [WritableArea(f"{name}/", paths.root / name) for name in (ANALYSIS, PLAN, SCRATCH)]
    laid: dict[str, int | None] = dict.fromkeys(baseline)
    if laid:  # before setup there is no baseline to measure the submission against
        areas.append(WritableArea(f"{SUBMISSION}/", paths.submission, laid, task.is_editable))
    return areas
