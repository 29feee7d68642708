"""Read a run folder (finished or still running) into one typed view for the page.

Sources: result.json (absent while running: state/run.json and the steps stand in),
task/task.json, experiments/step_*/step.json and diff.patch, logs/events.jsonl,
plan/, the generic search tree (`records.tree`: each step's parent node) and `verify_run`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aiscientist.records.accounting import best_step, is_better, successful, totals
from aiscientist.records.paths import DIFF, RunPaths
from aiscientist.records.tree import read_tree
from aiscientist.task import TaskError
from aiscientist.util.humanize import num

DIFF_CHARS = 60_000  # a huge diff is cut, not inlined whole
PLAN_MARKER = "\n\n## plan/"  # how prioritization appends the plan to its full output


class StepView(BaseModel):
    step: int
    hypothesis: str = ""
    success: bool = False
    valid: bool = True
    constraint_violated: bool = False
    error: str | None = None
    cause: str | None = None  # the failure's class (command not found, timeout, ...)
    metric: float | None = None
    duration_s: float | None = None
    tokens: int = 0
    cost: float = 0.0
    diff: str = ""
    parent: int | None = None  # tree-search agents: the step this one started from
    operator: str | None = None  # tree and population agents: draft, improve, mutate, ...
    group: str | None = None  # the node's island, stage or phase
    outcome: str = ""  # "new best", "no improvement", "failed", ...
    best_so_far: float | None = None

    @property
    def eligible(self) -> bool:
        """A step whose metric may become the best (`aiscientist.records.accounting`)."""
        return self.success and self.valid and not self.constraint_violated


class Moment(BaseModel):
    """One entry of the timeline: a decision, a specialist's summary, a denial, ..."""

    ts: str
    role: str
    kind: str
    text: str


class RunView(BaseModel):
    root: Path
    running: bool
    task: str
    agent: str
    metric: str | None
    direction: str
    baseline: float | None
    best_step: int | None
    best_metric: float | None
    test: float | None
    test_error: str | None = None
    stop_reason: str | None
    steps_total: int
    steps_successful: int
    steps_budget: int | None = None
    tokens: int
    cost: float
    wall_time_s: float | None
    verify: str
    steps: list[StepView]
    timeline: list[Moment]
    plan_versions: list[Moment]
    plan_texts: list[tuple[str, str]]
    denials: list[Moment]


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(errors="replace").splitlines() if path.is_file() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line being written while we read (a running run)
    return out


def _plan_versions(root: Path) -> list[tuple[str, str]]:
    """The plan as each prioritization call handed it back (kept in the replay journal,
    state/journal.jsonl), then the file as it is now when that differs."""
    versions = []
    for entry in _jsonl(RunPaths(root).journal):
        value = entry.get("value")
        if entry.get("kind") == "done" and isinstance(value, dict) and value.get("role") == "prioritization":
            _, found, rest = str(value.get("full_output", "")).partition(PLAN_MARKER)
            name, _, text = rest.partition("\n")
            if found:
                versions.append((f"plan/{name} · version {len(versions) + 1} (call {entry.get('key')})", text))
    for path in sorted((root / "plan").rglob("*.md")) if (root / "plan").is_dir() else []:
        text = path.read_text(errors="replace")
        if not versions or versions[-1][1].strip() != text.strip():
            versions.append((f"{path.relative_to(root)} · current", text))
    return versions


def run_root(folder: Path) -> Path:
    """The workspace of a run folder: itself, or `ws/` of a bench cell's round folder."""
    for candidate in (folder, folder / "ws"):
        if (candidate / "experiments").is_dir() and (candidate / "logs").is_dir():
            return candidate
    raise TaskError(folder, "RUN_DIR", "not a run folder (no experiments/ and logs/ in it or in its ws/)")


def _nodes(root: Path) -> dict[int, dict[str, Any]]:
    """step -> its parent step, operator and group, from the run's search tree (if any)."""
    tree = read_tree(root)
    parents = tree.step_parents() if tree is not None else {}
    return {step: {"parent": p, "operator": n.operator, "group": n.group} for step, (p, n) in parents.items()}


def _steps(root: Path, direction: str, baseline: float | None) -> list[StepView]:
    nodes = _nodes(root)
    steps: list[StepView] = []
    best = None
    for path in RunPaths(root).step_records():
        raw = _json(path)
        if raw is None:
            continue
        diff_file = path.parent / DIFF
        diff = diff_file.read_text(errors="replace")[:DIFF_CHARS] if diff_file.is_file() else ""
        step = StepView.model_validate({**raw, "diff": diff, **nodes.get(raw["step"], {})})
        step.hypothesis = step.hypothesis or "(no hypothesis recorded)"
        if not step.success:
            step.outcome = "failed"
        elif not successful(step):
            step.outcome = "constraint violated" if step.constraint_violated else "invalid"
        elif best is None or is_better(step.metric, best, direction):
            best = step.metric
            beats = baseline is None or is_better(best, baseline, direction)
            step.outcome = "new best" + ("" if beats else " (not better than the baseline)")
        else:
            step.outcome = "no improvement"
        step.best_so_far = best
        steps.append(step)
    return steps


def _moment(event: dict[str, Any]) -> Moment | None:
    kind, payload = event.get("kind", ""), event.get("payload", {})
    text = {
        "orchestrator.decision": lambda p: (
            f"decision {p.get('decision')} ({p.get('stage', '')}): calls {', '.join(p.get('tools', [])) or 'nothing'}"
        ),
        "specialist.end": lambda p: ("" if p.get("ok", True) else "(failed) ") + str(p.get("summary", "")),
        "experiment.end": lambda p: (
            f"step {p.get('step')}: "
            + (f"metric {num(p.get('metric'))}" if p.get("success") else f"failed: {p.get('error')}")
        ),
        "experiment.test": lambda p: (
            f"hidden test on step {p.get('step')}: "
            + (f"metric {num(p.get('metric'))}" if p.get("success") else f"failed: {p.get('error')}")
        ),
        "orchestrator.submit": lambda p: f"submit: {p.get('reason', '')}",
        "orchestrator.model_error": lambda p: f"model error: {p.get('error', '')}",
        "orchestrator.context_trimmed": lambda p: (
            f"context window full ({num(p.get('tokens'))} of {num(p.get('limit'))} tokens): forgot the "
            f"{p.get('forgot_turns')} oldest turns, kept {p.get('kept_turns')}"
        ),
        "access.denied": lambda p: f"{p.get('op')} {p.get('path')}: {p.get('reason')}",
        "run.end": lambda p: f"run ended: {p.get('stop_reason', '')}",
        "run.stopped": lambda p: (
            f"run stopped (resumable): {p.get('stop_reason', '')} {p.get('stop_detail', '')}".rstrip()
        ),
    }.get(kind)
    if text is None:
        return None
    role = payload.get("specialist") if kind == "specialist.end" else event.get("role", "")
    return Moment(ts=event.get("ts", ""), role=str(role), kind=kind, text=str(text(payload)))


def _plan_writes(events: list[dict[str, Any]]) -> list[Moment]:
    """Each write of a plan file: who, when, size and content hash (the log keeps no text)."""
    out = []
    for event in events:
        payload = event.get("payload", {})
        if event.get("kind") == "file.write" and str(payload.get("path", "")).startswith("plan/"):
            text = f"{payload['path']}: {num(payload.get('bytes'))} bytes, sha256 {str(payload.get('sha256', ''))[:12]}"
            out.append(Moment(ts=event.get("ts", ""), role=event.get("role", ""), kind="file.write", text=text))
    return out


def _verify(root: Path) -> str:
    from aiscientist.workspace.verify import verify_run

    try:
        report = verify_run(root)
    except Exception as err:  # a half-written run must still render
        return f"not checked ({type(err).__name__}: {err})"
    if report.clean:
        return f"clean ({report.events} events, {report.protected_files} protected files)"
    return f"{len(report.problems)} problem(s): " + "; ".join(str(p) for p in report.problems[:3])


def load_run(folder: Path | str) -> RunView:
    root = run_root(Path(folder))
    result = _json(RunPaths(root).result)
    state = _json(RunPaths(root).run_info) or {}
    task = _json(root / "task" / "task.json") or {}
    metric_spec = task.get("metric") or {}
    base = result or {}
    direction = base.get("direction") or metric_spec.get("direction") or "max"
    baseline = base.get("baseline", task.get("baseline"))
    steps = _steps(root, direction, baseline)
    events = _jsonl(RunPaths(root).events)
    moments = [m for m in map(_moment, events) if m is not None]
    best = best_step(steps, direction)
    counted = totals(steps)
    test = base.get("test") or {}
    return RunView(
        root=root,
        running=result is None,
        task=base.get("task") or task.get("name", root.name),
        agent=base.get("agent") or "aiscientist",
        metric=base.get("metric") or (f"{metric_spec['dataset']}/{metric_spec['name']}" if metric_spec else None),
        direction=direction,
        baseline=baseline,
        best_step=base.get("best_step", best.step if best else None),
        best_metric=base.get("best_metric", best.metric if best else None),
        test=test.get("metric"),
        test_error=test.get("error"),
        stop_reason=base.get("stop_reason") or state.get("stop_reason") or ("running" if result is None else None),
        steps_total=base.get("steps_total", len(steps)),
        steps_successful=base.get("steps_successful", sum(s.success for s in steps)),
        steps_budget=state.get("steps") or (base.get("config") or {}).get("steps"),
        tokens=base.get("tokens", counted.tokens),
        cost=base.get("cost", counted.cost),
        wall_time_s=base.get("wall_time_s"),
        verify=_verify(root),
        steps=steps,
        timeline=[m for m in moments if m.kind != "access.denied"],
        plan_versions=_plan_writes(events),
        plan_texts=_plan_versions(root),
        denials=[m for m in moments if m.kind == "access.denied"],
    )
