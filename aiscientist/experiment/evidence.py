"""A step's code evidence: a snapshot of the editable files and their diff
against the baseline snapshot. The submission is untrusted data here: links are
written into the diff as links and never followed, special files are skipped,
and file bytes are read only through descriptors opened without following links. The diff is
capped (DIFF_FILE_BYTES a file, DIFF_BYTES a step); what it leaves out is named in it."""

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
DIFF_FILE_BYTES = 1 << 20  # a file larger than this (before or after) is not diffed, only named with its size
DIFF_BYTES = 4 << 20  # a step's diff.patch; past it the remaining files are named, not diffed


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
    diff = _Diff()
    (step_dir / STEP_CODE).mkdir(parents=True, exist_ok=True)
    for rel in sorted(set(current) | set(baseline)):
        before = baseline.get(rel, "")
        entry = current.get(rel)
        if entry is not None and entry.kind == "link":
            diff.add(rel, [f"Symbolic link b/{shown(rel)} -> {shown(entry.digest)} (not followed)\n"])
            continue
        try:
            data = untrusted.read_file(paths.submission, rel, READ_LIMIT, hard_links=True) if entry is not None else b""
        except untrusted.Unreadable:
            continue
        diff.add(rel, [] if diff.left_out else _file_diff(rel, before, data))
        if entry is not None:  # the step quota (sandbox.disk_mb) bounds what the editable files hold
            target = step_dir / STEP_CODE / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    (step_dir / DIFF).write_text(diff.text())


def _file_diff(rel: str, before: str, data: bytes) -> list[str]:
    size = max(len(before.encode(errors="replace")), len(data))
    if size > DIFF_FILE_BYTES:
        return [
            f"File b/{shown(rel)} is too large to diff ({size:,} bytes > {DIFF_FILE_BYTES:,}); "
            f"its copy is in {STEP_CODE}/\n"
        ]
    try:
        after = data.decode()
    except UnicodeDecodeError:
        return [f"Binary file b/{shown(rel)} differs or is new\n"]
    return list(
        difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{shown(rel)}", f"b/{shown(rel)}")
    )


class _Diff:
    """diff.patch as it is built: at most DIFF_BYTES; the files past that are listed, not diffed."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.size = 0
        self.left_out: list[str] = []

    def add(self, rel: str, chunks: list[str]) -> None:
        size = sum(len(chunk.encode(errors="replace")) for chunk in chunks)
        if self.left_out or self.size + size > DIFF_BYTES:
            self.left_out.append(shown(rel))  # once one is left out, the later ones are not diffed
            return
        self.chunks += chunks
        self.size += size

    def text(self) -> str:
        if not self.left_out:
            return "".join(self.chunks)
        listed = "".join(f"#   {name}\n" for name in self.left_out[:200])
        more = f"#   ... and {len(self.left_out) - 200} more\n" if len(self.left_out) > 200 else ""
        return "".join(self.chunks) + (
            f"# diff cut at {DIFF_BYTES:,} bytes: {len(self.left_out)} file(s) left out "
            f"(their copies are in {STEP_CODE}/)\n" + listed + more
        )
