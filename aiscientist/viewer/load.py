"""Read a run folder (finished or still running) into one typed view for the page.

Sources: result.json (absent while running: state/run.json and the steps stand in),
task/task.json, experiments/step_*/step.json and diff.patch, logs/events.jsonl,
plan/, the generic search tree (`records.tree`: each step's parent node) and `verify_run`.

The folder may be hostile (tampered, or someone else's): every file is read with the
bounded no-follow reader (`aiscientist.util.untrusted`) and JSON with a depth limit; a
record field of the wrong type is left out, a record that cannot be placed or an event
that cannot be shown is skipped, so the page is always written and shows no host file.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from aiscientist.records.accounting import best_step, is_better, successful, totals
from aiscientist.records.cell import CELL_WS, run_folder
from aiscientist.records.paths import DIFF, EXPERIMENTS, LOGS, PLAN, STEP_RECORD, TASK_RECORD, RunPaths
from aiscientist.records.result import RunResult
from aiscientist.records.timing import first_experiment_s
from aiscientist.records.tree import Tree
from aiscientist.task import TaskError
from aiscientist.util import untrusted
from aiscientist.util.humanize import num

DIFF_CHARS = 60_000  # a huge diff is cut, not inlined whole
FILE_BYTES = 64 << 20  # a record, the tree, a plan file
LOG_BYTES = 512 << 20  # the event log and the replay journal
PLAN_MARKER = f"\n\n## {PLAN}/"  # how prioritization appends the plan to its full output (`with_file`)


class StepView(BaseModel):
    step: int
    agent: str = ""
    started_at: str = ""
    hypothesis: str = ""
    success: bool = False
    valid: bool = True
    constraint_violated: bool = False
    error: str | None = None
    cause: str | None = None  # the failure's class (command not found, timeout, ...)
    metric: float | None = None
    repeat_of: int | None = None  # the earlier measured step whose code it ran again (0: the baseline's)
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
    ttfe_s: float | None
    experiments_per_hour: float | None
    prompt_tokens: int | None
    cached_tokens: int | None
    cache_saved: float | None
    verify: str
    steps: list[StepView]
    timeline: list[Moment]
    plan_versions: list[Moment]
    plan_texts: list[tuple[str, str]]
    denials: list[Moment]


def _read(root: Path, rel: str, limit: int = FILE_BYTES) -> bytes | None:
    """`root/rel` read without following a link (a folder on the way included); None when it
    is missing, not a plain file with one link, or larger than `limit`."""
    try:
        return untrusted.read_file(root, rel, limit)
    except untrusted.Unreadable:
        return None


def _json(root: Path, rel: str) -> dict[str, Any] | None:
    data = _read(root, rel)
    try:
        parsed = untrusted.loads_json(data) if data is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _jsonl(root: Path, rel: str) -> list[dict[str, Any]]:
    out = []
    for line in (_read(root, rel, LOG_BYTES) or b"").splitlines():
        try:
            parsed = untrusted.loads_json(line)
        except (ValueError, UnicodeDecodeError):
            continue  # a line being written while we read (a running run), or a damaged one
        if isinstance(parsed, dict):
            out.append(parsed)
    return out


Model = TypeVar("Model", bound=BaseModel)


def _lenient(model: type[Model], raw: dict[str, Any]) -> Model:
    """`model` from `raw`, leaving out each field whose value has the wrong type
    (ValidationError only when a required field is missing or wrong)."""
    kept = {}
    for key in model.model_fields:
        if key in raw:
            try:
                kept[key] = _adapter(model, key).validate_python(raw[key])
            except ValidationError:
                continue
    return model.model_validate(kept)


@cache
def _adapter(model: type[BaseModel], key: str) -> TypeAdapter:
    return TypeAdapter(model.model_fields[key].annotation)


def _plan_versions(root: Path) -> list[tuple[str, str]]:
    """The plan as each prioritization call handed it back (kept in the replay journal,
    state/journal.jsonl), then the file as it is now when that differs."""
    versions = []
    for entry in _jsonl(root, _rel(root, RunPaths(root).journal)):
        value = entry.get("value")
        if entry.get("kind") == "done" and isinstance(value, dict) and value.get("role") == "prioritization":
            _, found, rest = str(value.get("full_output", "")).partition(PLAN_MARKER)
            name, _, text = rest.partition("\n")
            if found:
                versions.append((f"{PLAN}/{name} · version {len(versions) + 1} (call {entry.get('key')})", text))
    plans = untrusted.walk(root / PLAN).files() if (root / PLAN).is_dir() else []
    for node in plans:
        data = _read(root, f"{PLAN}/{node.rel}") if node.rel.endswith(".md") else None
        text = data.decode(errors="replace") if data is not None else None
        if text is not None and (not versions or versions[-1][1].strip() != text.strip()):
            versions.append((f"{PLAN}/{node.rel} · current", text))
    return versions


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def run_root(folder: Path) -> Path:
    """The workspace of a run folder: itself, or `ws/` of a bench cell's round folder."""
    found = run_folder(folder)
    if found is None:
        raise TaskError(
            folder, "RUN_DIR", f"not a run folder (no {EXPERIMENTS}/ and {LOGS}/ in it or in its {CELL_WS}/)"
        )
    return found


def _nodes(root: Path) -> dict[int, dict[str, Any]]:
    """step -> its parent step, operator and group, from the run's search tree (if any)."""
    raw = _json(root, _rel(root, RunPaths(root).tree))
    try:
        parents = Tree.model_validate(raw).step_parents() if raw is not None else {}
    except (ValidationError, ValueError, TypeError):
        parents = {}
    return {step: {"parent": p, "operator": n.operator, "group": n.group} for step, (p, n) in parents.items()}


def _steps(root: Path, direction: str, baseline: float | None) -> list[StepView]:
    nodes = _nodes(root)
    steps: list[StepView] = []
    best = None
    for path in RunPaths(root).step_records():
        folder = _rel(root, path.parent)
        raw = _json(root, f"{folder}/{STEP_RECORD}")
        try:
            step = _lenient(StepView, raw or {})
        except ValidationError:
            continue  # no step number: the record cannot be placed
        diff = _read(root, f"{folder}/{DIFF}", DIFF_CHARS * 4) or b""
        step = _lenient(
            StepView, {**raw, "diff": diff.decode(errors="replace")[:DIFF_CHARS], **nodes.get(step.step, {})}
        )
        step.hypothesis = step.hypothesis or "(no hypothesis recorded)"
        if not step.success:
            step.outcome = "failed"
        elif not successful(step):
            step.outcome = "constraint violated" if step.constraint_violated else "invalid"
        elif step.repeat_of is not None:
            step.outcome = f"repeat of step {step.repeat_of}" if step.repeat_of else "repeat of the baseline's code"
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
    """The event as a line of the timeline; None for kinds the page does not show, and for
    an event whose fields do not have the types our writers give them."""
    try:
        return _shown(event)
    except (TypeError, ValueError, AttributeError, KeyError, ValidationError):
        return None


def _shown(event: dict[str, Any]) -> Moment | None:
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
        "guidance.note": lambda p: f"guidance note {p.get('id')}: {p.get('text', '')}",
        "guidance.ack": lambda p: (
            f"acknowledged note(s) {p.get('notes')} at decision {p.get('decision')}: "
            + f"calls {', '.join(p.get('tools', []))}"
        ),
        "guidance.delivered": lambda p: f"note(s) {p.get('notes')} carried by the next prompt",
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
        payload = event.get("payload")
        if event.get("kind") != "file.write" or not isinstance(payload, dict):
            continue
        path = str(payload.get("path", ""))
        if path.startswith(PLAN + "/"):
            size = payload.get("bytes")
            text = f"{path}: {num(size if isinstance(size, int) else None)} bytes, "
            text += f"sha256 {str(payload.get('sha256', ''))[:12]}"
            out.append(
                Moment(ts=str(event.get("ts", "")), role=str(event.get("role", "")), kind="file.write", text=text)
            )
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


class _Result(RunResult):
    """`RunResult` as the page reads it: a field may be missing (a run still running, a
    hostile folder); `_lenient` leaves out each field of the wrong type."""

    task: str | None = None  # type: ignore[assignment]
    agent: str | None = None  # type: ignore[assignment]


class _Facts(BaseModel):
    """The few fields of state/run.json (`orchestrator.RunInfo`) and task/task.json (`Task`) the
    page shows, read without their owners' settings types."""

    steps: int | None = None
    stop_reason: str | None = None
    started_at: float | None = None
    """When the command started (wall clock; `RunInfo.started_at`): a running run's TTFE counts from it."""
    name: str | None = None
    baseline: float | None = None
    metric: dict[str, Any] = {}
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    cache_saved: float | None = None


def load_run(folder: Path | str) -> RunView:
    root = run_root(Path(folder))
    paths = RunPaths(root)
    result = _json(root, _rel(root, paths.result))
    base = _lenient(_Result, result or {})
    state = _lenient(_Facts, _json(root, _rel(root, paths.run_info)) or {})
    task = _lenient(_Facts, _json(root, TASK_RECORD) or {})
    spec = task.metric
    direction = base.direction or (spec.get("direction") if spec.get("direction") in ("max", "min") else None) or "max"
    baseline = base.baseline if "baseline" in base.model_fields_set else task.baseline
    steps = _steps(root, direction, baseline)
    events = _jsonl(root, _rel(root, paths.events))
    moments = [m for m in map(_moment, events) if m is not None]
    best = best_step(steps, direction)
    counted = totals(steps)
    given = base.model_fields_set
    return RunView(
        root=root,
        running=result is None,
        task=base.task or task.name or root.name,
        agent=base.agent or "aiscientist",
        metric=base.metric or (f"{spec.get('dataset')}/{spec.get('name')}" if spec else None),
        direction=direction,
        baseline=baseline,
        best_step=base.best_step if "best_step" in given else (best.step if best else None),
        best_metric=base.best_metric if "best_metric" in given else (best.metric if best else None),
        test=base.test_metric,
        test_error=base.test_error,
        stop_reason=(base.stop_reason and base.stop_reason.value)
        or state.stop_reason
        or ("running" if result is None else None),
        steps_total=base.steps_total if "steps_total" in given else len(steps),
        steps_successful=base.steps_successful if "steps_successful" in given else sum(s.success for s in steps),
        steps_budget=state.steps or _lenient(_Facts, base.config).steps,
        tokens=base.tokens if "tokens" in given else counted.tokens,
        cost=base.cost if "cost" in given else counted.cost,
        wall_time_s=base.wall_time_s if "wall_time_s" in given else None,
        ttfe_s=base.ttfe_s if "ttfe_s" in given else first_experiment_s(steps, state.started_at),
        experiments_per_hour=base.experiments_per_hour,
        prompt_tokens=base.prompt_tokens,
        cached_tokens=base.cached_tokens,
        cache_saved=base.cache_saved,
        verify=_verify(root),
        steps=steps,
        timeline=[m for m in moments if m.kind != "access.denied"],
        plan_versions=_plan_writes(events),
        plan_texts=_plan_versions(root),
        denials=[m for m in moments if m.kind == "access.denied"],
    )
