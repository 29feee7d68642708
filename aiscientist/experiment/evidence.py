"""A step's code evidence: a snapshot of the editable files and their diff
against the baseline snapshot. The submission is untrusted data here: links are
written into the diff as links and never followed, special files are skipped,
and file bytes are read only through descriptors opened without following links."""

from __future__ import annotations

import difflib
from pathlib import Path

from aiscientist.experiment import snapshots
from aiscientist.experiment.integrity import READ_LIMIT, Entry
from aiscientist.records.paths import DIFF, STEP_CODE, RunPaths
from aiscientist.task import Task
from aiscientist.util import untrusted
from aiscientist.util.text import name as shown

BASELINE_TAG = snapshots.BASELINE_TAG


def baseline_editable(task: Task, paths: RunPaths) -> dict[str, str]:
    """The editable files' text in the baseline snapshot (it never changes)."""
    snap = snapshots.load(paths, BASELINE_TAG)
    return {
        rel: snapshots.blob(paths, item).decode(errors="replace")
        for rel, item in snap.files.items()
        if task.is_editable(rel) and item.link is None
    }


def write_code_evidence(
    task: Task, paths: RunPaths, baseline: dict[str, str], tree: dict[str, Entry], step_dir: Path
) -> None:
    """`step_dir/code/` (editable regular files) and `step_dir/diff.patch` against
    `baseline` (from `baseline_editable`)."""
    current = {rel: entry for rel, entry in tree.items() if task.is_editable(rel) and entry.kind in ("file", "link")}
    chunks: list[str] = []
    (step_dir / STEP_CODE).mkdir(parents=True, exist_ok=True)
    for rel in sorted(set(current) | set(baseline)):
        before = baseline.get(rel, "")
        entry = current.get(rel)
        if entry is not None and entry.kind == "link":
            chunks.append(f"Symbolic link b/{shown(rel)} -> {shown(entry.digest)} (not followed)\n")
            continue
        try:
            data = untrusted.read_file(paths.submission, rel, READ_LIMIT, hard_links=True) if entry is not None else b""
        except untrusted.Unreadable:
            continue
        try:
            after = data.decode()
        except UnicodeDecodeError:
            chunks.append(f"Binary file b/{shown(rel)} differs or is new\n")
        else:
            chunks += difflib.unified_diff(
                before.splitlines(True), after.splitlines(True), f"a/{shown(rel)}", f"b/{shown(rel)}"
            )
        if entry is not None:
            target = step_dir / STEP_CODE / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    (step_dir / DIFF).write_text("".join(chunks))
