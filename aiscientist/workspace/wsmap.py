"""WORKSPACE.md: the short map the orchestrator sees instead of the files.

One line per area (who writes it, what it holds, file count, size, last update,
first line of its main file), plus summaries that stay the same length however
many experiments exist: counts, the latest step and the best one. It is rebuilt
several times per step, so what only grows (step folders, append-only logs) is
read once and kept in a `MapCache`.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiscientist.workspace.eventlog import SESSION_MARK
from aiscientist.workspace.permissions import EDITABLE, RoleRules

if TYPE_CHECKING:
    from aiscientist.workspace.workspace import Workspace

FIRST_LINE_CHARS = 90
Stats = tuple[int, int, float]  # files, bytes, latest mtime


class MapCache:
    """What the map has already read: each recorded step folder (its record and
    file stats; only the two newest are looked at again, since the watcher may still
    mark one invalid) and, per append-only log, how far it was counted."""

    def __init__(self) -> None:
        self._steps: dict[str, tuple[int, dict[str, Any], Stats]] = {}
        self._logs: dict[Path, tuple[int, int]] = {}

    def steps(self, folder: Path) -> tuple[list[dict[str, Any]], Stats]:
        names = sorted(n for n in os.listdir(folder) if n.startswith("step_")) if folder.is_dir() else []
        records, count, size, latest = [], 0, 0, 0.0
        for i, name in enumerate(names):
            cached = self._steps.get(name)
            if cached is None or i >= len(names) - 2:
                cached = self._read_step(folder / name, cached)
            records.append(cached[1])
            count, size, latest = count + cached[2][0], size + cached[2][1], max(latest, cached[2][2])
        return records, (count, size, latest)

    def _read_step(self, path: Path, cached: tuple[int, dict[str, Any], Stats] | None) -> tuple[int, dict[str, Any], Stats]:
        try:
            stamp = os.stat(path / "step.json").st_mtime_ns
        except OSError:
            return (0, {"step": path.name, "success": False, "error": "no step.json (crashed or running)"}, _stats(path))
        if cached is not None and cached[0] == stamp:
            return cached
        try:
            record = json.loads((path / "step.json").read_bytes())
        except (OSError, ValueError):
            return (0, {"step": path.name, "success": False, "error": "unreadable step.json"}, _stats(path))
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


def build_map(ws: Workspace, stable: bool = False) -> str:
    """The map. `stable` is the variant for prompts: without wall-clock times and log
    sizes, so the text depends only on the run's history (record/replay), and without
    what the prompt around it already says (the task's goal, files and commands; who
    writes each area and what it holds, which the system prompt and tools describe)."""
    root = ws.paths.root
    task = ws.task
    set_name = "file_bus" if ws.file_bus else "file_bus_off"
    rules = ws.permissions.sets[set_name]
    steps, experiment_stats = ws.map_cache.steps(ws.paths.experiments)
    lines = [
        f"# WORKSPACE — {task.name} ({task.kind})",
        ("" if stable else f"updated {_stamp(datetime.now(timezone.utc).timestamp())} UTC · ") + f"File-as-Bus {'on' if ws.file_bus else 'off'} · active: {ws.active}",
    ]
    if task.metric and not stable:
        goal = f"goal: {task.metric.label} ({task.metric.direction})"
        if task.baseline is not None:
            goal += f" · stated baseline {task.baseline:.6g}"
        if task.target is not None:
            goal += f" · target {task.target:.6g}"
        lines.append(goal)
    lines += ["", "| area | files | size | main file: first line |" if stable else "| area | written by | holds | files | size | updated | main file: first line |"]
    lines.append("|---" * (4 if stable else 7) + "|")
    for area, info in ws.permissions.areas.items():
        count, size, mtime = experiment_stats if area == "experiments" else _stats(root / area)
        main = _first_line(root / area / info.main, f"{info.main}") if info.main else "-"
        if stable:
            lines.append(f"| {area}/ | {count} | {'-' if area == 'logs' else _size(size)} | {main} |")
            continue
        writers = "engine (experimentation)" if area == "experiments" else "append-only (API)" if area == "logs" else _writers(rules, area)
        lines.append(f"| {area}/ | {writers} | {info.holds} | {count} | {_size(size)} | {_stamp(mtime)} | {main} |")
    lines += ["", *([] if stable else _submission_lines(ws)), *_experiment_lines(ws, steps), *_log_lines(ws, stable)]
    return "\n".join(lines) + "\n"


def _writers(rules: dict[str, RoleRules], area: str) -> str:
    names = [role for role, r in rules.items() if role != "system" and any(g == EDITABLE and area == "submission" or g.startswith(area + "/") for g in r.write)]
    return ", ".join(names) or "nobody"


def _stats(folder: Path) -> Stats:
    count = size = 0
    latest = 0.0
    for base, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            try:
                info = os.lstat(os.path.join(base, name))
            except OSError:
                continue
            count += 1
            size += info.st_size
            latest = max(latest, info.st_mtime)
    return count, size, latest


def _submission_lines(ws: Workspace) -> list[str]:
    task = ws.task
    return [
        "submission/: editable " + (", ".join(task.editable_globs) or "(none)") + " · protected (read-only) " + (", ".join(task.protected) or "(none)"),
        "experiment commands: " + _cut(" && ".join(task.commands) or "(none)", 200),
    ]


def _experiment_lines(ws: Workspace, steps: list[dict[str, Any]]) -> list[str]:
    if not steps:
        return ["experiments/: no steps yet"]
    ok = sum(bool(s.get("success")) for s in steps)
    invalid = sum(s.get("valid") is False for s in steps)
    lines = [f"experiments/: {len(steps)} steps · {ok} succeeded · {len(steps) - ok} failed" + (f" · {invalid} invalid (tampering)" if invalid else "")]
    lines.append("latest: " + _describe(ws, steps[-1]))
    eligible = [s for s in steps if s.get("success") and s.get("valid", True) and not s.get("constraint_violated") and s.get("metric") is not None]
    if eligible and ws.task.metric:
        best = eligible[0]
        for s in eligible[1:]:
            if ws.task.metric.better(s["metric"], best["metric"]):
                best = s
        lines.append("best: " + _describe(ws, best))
    return lines


def _describe(ws: Workspace, step: dict[str, Any]) -> str:
    number = step.get("step")
    name = f"step_{number:04d}" if isinstance(number, int) else str(number)
    if step.get("success"):
        label = ws.task.metric.name if ws.task.metric else "metric"
        outcome = f"{label}={step.get('metric'):.6g}" if isinstance(step.get("metric"), (int, float)) else "ok"
    else:
        outcome = "failed: " + _cut(str(step.get("error") or "?"), 80)
    hypothesis = _cut(str(step.get("hypothesis", "")).strip().splitlines()[0] if step.get("hypothesis") else "", 80)
    return f"{name} · {outcome}" + (f' · "{hypothesis}"' if hypothesis else "")


def _log_lines(ws: Workspace, stable: bool) -> list[str]:
    """Event counts depend on the watcher's batching, so stable maps leave them out."""
    parts = [] if stable else [f"{ws.events.head().get('seq', 0)} events"]
    for name, rel in ws.permissions.logs.items():
        parts.append(f"{rel}: {ws.map_cache.sessions(ws.paths.root / rel)} sessions")
    return ["logs/: " + " · ".join(parts)]


def _first_line(path: Path, name: str) -> str:
    if not path.is_file():
        return f"{name}: (none yet)"
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip():
                return f'{name}: "{_cut(line.strip(), FIRST_LINE_CHARS)}"'
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
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if ts else "-"
