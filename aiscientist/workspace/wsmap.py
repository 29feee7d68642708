"""WORKSPACE.md: the short map the orchestrator sees instead of the files.

One line per area (who writes it, what it holds, file count, size, last update,
first line of its main file), plus summaries that stay the same length however
many experiments exist: counts, the latest step and the best one. It is rebuilt
several times per step, so what only grows (step folders, append-only logs) is
read once and kept in a `MapCache`.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from aiscientist.records.paths import EXPERIMENTS, LOGS, STEP_DIR, STEP_RECORD, SUBMISSION, RunPaths
from aiscientist.task import Task
from aiscientist.util import untrusted
from aiscientist.util.text import clean, quoted
from aiscientist.workspace.eventlog import SESSION_MARK, EventLog
from aiscientist.workspace.permissions import EDITABLE, PermissionsFile, RoleRules

FIRST_LINE_CHARS = 90
FIRST_LINE_BYTES = 16 << 10
Stats = tuple[int, int, float]  # files, bytes, latest mtime


@dataclass
class StepsSummary:
    """What the map says about the step folders: counts, file stats, latest, best."""

    count: int = 0
    ok: int = 0
    invalid: int = 0
    stats: Stats = (0, 0, 0.0)
    latest: dict[str, Any] | None = None
    best: dict[str, Any] | None = None

    def add(self, record: dict[str, Any], stats: Stats, better: Callable[[float, float], bool] | None) -> None:
        self.count += 1
        self.ok += bool(record.get("success"))
        self.invalid += record.get("valid") is False
        self.stats = (self.stats[0] + stats[0], self.stats[1] + stats[1], max(self.stats[2], stats[2]))
        self.latest = record
        eligible = (
            record.get("success")
            and record.get("valid", True)
            and not record.get("constraint_violated")
            and isinstance(record.get("metric"), (int, float))
        )
        if eligible and better is not None and (self.best is None or better(record["metric"], self.best["metric"])):
            self.best = record


class MapCache:
    """What the map has already read, so a refresh costs the same at step 10 and
    step 1,000: recorded step folders are folded into a running summary once they
    are final (all but the two newest, which the watcher may still mark invalid),
    and each append-only log is counted only from where the last count ended."""

    def __init__(self) -> None:
        self._steps: dict[str, tuple[int, dict[str, Any], Stats]] = {}
        self._folded_count = 0
        self._folded = StepsSummary()
        self._logs: dict[Path, tuple[int, int]] = {}

    def steps(self, paths: RunPaths, better: Callable[[float, float], bool] | None) -> StepsSummary:
        """Step folders are numbered 1, 2, ... without gaps (a crashed attempt's number
        is reused), so only those from the first one not yet folded are looked at. If
        the newest folded folder went away, everything is folded again; a gap made
        further back is for `verify` to report, not the map."""
        if self._folded_count and not paths.step_dir(self._folded_count).is_dir():
            self._folded_count, self._folded = 0, StepsSummary()
        unfolded, number = [], self._folded_count + 1
        while (folder := paths.step_dir(number)).is_dir():
            unfolded.append(folder)
            number += 1
        final = max(0, len(unfolded) - 2)
        for folder in unfolded[:final]:
            self._folded.add(*self._entry(folder), better)
            self._steps.pop(folder.name, None)
        self._folded_count += final
        summary = copy.copy(self._folded)
        for folder in unfolded[final:]:
            summary.add(*self._entry(folder), better)
        return summary

    def _entry(self, path: Path) -> tuple[dict[str, Any], Stats]:
        _, record, stats = self._read_step(path, self._steps.get(path.name))
        return record, stats

    def _read_step(
        self, path: Path, cached: tuple[int, dict[str, Any], Stats] | None
    ) -> tuple[int, dict[str, Any], Stats]:
        try:
            stamp = os.stat(path / STEP_RECORD).st_mtime_ns
        except OSError:
            return (
                0,
                {"step": path.name, "success": False, "error": f"no {STEP_RECORD} (crashed or running)"},
                _stats(path),
            )
        if cached is not None and cached[0] == stamp:
            return cached
        try:
            record = json.loads((path / STEP_RECORD).read_bytes())
        except (OSError, ValueError):
            return (0, {"step": path.name, "success": False, "error": f"unreadable {STEP_RECORD}"}, _stats(path))
        entry = self._steps[path.name] = (stamp, record, _stats(path))
        return entry

    def sessions(self, path: Path) -> int:
        """`=== Session N ===` marks in an append-only log, counting only new bytes."""
        if not path.is_file():
            return 0
        size = path.stat().st_size
        offset, count = self._logs.get(path, (0, 0))
        if size < offset:  # rewritten (verify will say so): count again
            offset, count = 0, 0
        with open(path, "rb") as handle:
            handle.seek(offset)
            chunk = handle.read(size - offset)
        complete = chunk.rfind(b"\n") + 1  # count whole lines only
        count += sum(line.startswith(SESSION_MARK.encode()) for line in chunk[:complete].splitlines())
        self._logs[path] = (offset + complete, count)
        return count


class MappedWorkspace(Protocol):
    """What the map reads of a workspace."""

    active: str
    events: EventLog
    map_cache: MapCache
    paths: RunPaths
    permissions: PermissionsFile
    task: Task

    @property
    def file_bus(self) -> bool: ...


def build_map(ws: MappedWorkspace) -> str:
    """The map WORKSPACE.md holds (prompts carry `build_brief_map`, which has no clock)."""
    root = ws.paths.root
    task = ws.task
    set_name = "file_bus" if ws.file_bus else "file_bus_off"
    rules = ws.permissions.sets[set_name]
    steps = ws.map_cache.steps(ws.paths, task.metric.better if task.metric else None)
    lines = [
        f"# WORKSPACE — {task.name} ({task.kind})",
        f"updated {_stamp(datetime.now(UTC).timestamp())} UTC · File-as-Bus {'on' if ws.file_bus else 'off'}"
        f" · active: {ws.active}",
    ]
    if task.metric:
        goal = f"goal: {task.metric.label} ({task.metric.direction})"
        if task.baseline is not None:
            goal += f" · stated baseline {task.baseline:.6g}"
        if task.target is not None:
            goal += f" · target {task.target:.6g}"
        lines.append(goal)
    lines += ["", "| area | written by | holds | files | size | updated | main file: first line |", "|---" * 7 + "|"]
    for area, info in ws.permissions.areas.items():
        count, size, mtime = steps.stats if area == EXPERIMENTS else _stats(root / area)
        main = _first_line(root / area / info.main, f"{info.main}") if info.main else "-"
        writers = (
            "engine (experimentation)"
            if area == EXPERIMENTS
            else "append-only (API)"
            if area == LOGS
            else _writers(rules, area)
        )
        lines.append(f"| {area}/ | {writers} | {info.holds} | {count} | {_size(size)} | {_stamp(mtime)} | {main} |")
    lines += ["", *_submission_lines(ws), *_experiment_lines(ws, steps), *_log_lines(ws)]
    return "\n".join(lines) + "\n"


def build_brief_map(ws: MappedWorkspace) -> str:
    """The map in a few lines, for a prompt rebuilt at every decision: each area's file count, then the
    experiments' latest and best step (what the table adds, the first lines of main files, costs ~200
    tokens a decision)."""
    steps = ws.map_cache.steps(ws.paths, ws.task.metric.better if ws.task.metric else None)
    areas = []
    for area in ws.permissions.areas:
        if area not in (EXPERIMENTS, LOGS):
            areas.append(f"{area}/ {_stats(ws.paths.root / area)[0]}")
    head = f"Workspace (File-as-Bus {'on' if ws.file_bus else 'off'}), files per area: " + " · ".join(areas)
    return "\n".join([head, *_experiment_lines(ws, steps)])


def _writers(rules: dict[str, RoleRules], area: str) -> str:
    names = [
        role
        for role, r in rules.items()
        if role != "system" and any(g == EDITABLE and area == SUBMISSION or g.startswith(area + "/") for g in r.write)
    ]
    return ", ".join(names) or "nobody"


def _stats(folder: Path) -> Stats:
    """Files, bytes and newest mtime below `folder` (`.git` not entered), walked without
    following links and within the walker's limits (a hostile tree cannot crash the map)."""
    count = size = 0
    latest = 0.0
    for node in untrusted.walk(folder, enter=lambda rel: rel.rsplit("/", 1)[-1] != ".git").nodes:
        if node.kind != "dir":
            count += 1
            size += node.size
            latest = max(latest, node.mtime)
    return count, size, latest


def _submission_lines(ws: MappedWorkspace) -> list[str]:
    task = ws.task
    return [
        f"{SUBMISSION}/: editable "
        + (", ".join(task.editable_globs) or "(none)")
        + " · protected (read-only) "
        + (", ".join(task.protected) or "(none)"),
        "experiment commands: " + _cut(" && ".join(task.commands) or "(none)", 200),
    ]


def _experiment_lines(ws: MappedWorkspace, steps: StepsSummary) -> list[str]:
    if not steps.count or steps.latest is None:
        return [f"{EXPERIMENTS}/: no steps yet"]
    lines = [
        f"{EXPERIMENTS}/: {steps.count} steps · {steps.ok} succeeded · {steps.count - steps.ok} failed"
        + (f" · {steps.invalid} invalid (tampering)" if steps.invalid else "")
    ]
    if steps.best is steps.latest:  # said once: the status re-reads these lines uncached at every decision
        return [*lines, "latest, the best: " + _describe(ws, steps.latest)]
    lines.append("latest: " + _describe(ws, steps.latest))
    if steps.best is not None:
        lines.append("best: " + _describe(ws, steps.best))
    return lines


def _describe(ws: MappedWorkspace, step: dict[str, Any]) -> str:
    number = step.get("step")
    name = STEP_DIR.format(number) if isinstance(number, int) else str(number)
    if step.get("success"):
        label = ws.task.metric.name if ws.task.metric else "metric"
        outcome = f"{label}={step.get('metric'):.6g}" if isinstance(step.get("metric"), (int, float)) else "ok"
    else:
        outcome = "failed: " + quoted(_cut(str(step.get("error") or "?"), 80))
    hypothesis = _cut(str(step.get("hypothesis", "")).strip().splitlines()[0] if step.get("hypothesis") else "", 80)
    return f"{name} · {outcome}" + (f' · "{hypothesis}"' if hypothesis else "")


def _log_lines(ws: MappedWorkspace) -> list[str]:
    parts = [f"{ws.events.head().get('seq', 0)} events"]
    for rel in ws.permissions.logs.values():
        parts.append(f"{rel}: {ws.map_cache.sessions(ws.paths.root / rel)} sessions")
    return [f"{LOGS}/: " + " · ".join(parts)]


def _first_line(path: Path, name: str) -> str:
    try:
        head = untrusted.read_head(path.parent, path.name, FIRST_LINE_BYTES)
    except untrusted.Unreadable as err:
        return f"{name}: (none yet)" if err.reason == "missing" else f"{name}: (not read: {err.reason})"
    for line in head.decode("utf-8", errors="replace").splitlines():
        if line.strip():
            return f'{name}: "{_cut(clean(line.strip()), FIRST_LINE_CHARS)}"'
    return f"{name}: (empty)"


def _cut(text: str, limit: int) -> str:
    text = text.replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S") if ts else "-"
