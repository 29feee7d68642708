"""`solve`: create or resume a run, drive the graph, write `result.json`.

`solve(task, run_dir, config, model, steps)` is the one entry point (the CLI and the
benchmark both call it). A run folder that already holds a run is resumed: its saved
config and model are used, the SQLite checkpoint restarts the graph at the last
finished node, and the journal answers effects that were already done.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel, ValidationError

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import StopReason
from aiscientist.config import RunConfig
from aiscientist.experiment import snapshots
from aiscientist.experiment.finish import finish_run
from aiscientist.llm import load_llm_config, make_client
from aiscientist.llm.budget import forget_run, read_records
from aiscientist.orchestrator.graph import Orchestrator
from aiscientist.records.accounting import cache_fields, call_usage
from aiscientist.records.paths import RUN_INFO, STEP_RECORD, RunPaths, write_atomic
from aiscientist.records.result import RunResult
from aiscientist.records.step import StepRecord, folder_hashes
from aiscientist.task import Task, TaskError, load_task
from aiscientist.tracking import parse_spec, start_tracking


class RunInfo(BaseModel):
    """`state/run.json`: what a resume needs besides the workspace itself."""

    model: str
    steps: int
    wall_time_s: float | None = None
    config: RunConfig
    finished: bool = False  # False after a stop by a failing model: `--resume` continues the run
    started_at: float | None = None  # the first command's start (wall clock): the time to first experiment
    stop_reason: StopReason | None = None


Progress = Callable[[dict[str, Any]], None]


def is_run_folder(run_dir: Path) -> bool:
    return RunPaths(Path(run_dir)).run_info.is_file()


def solve(
    task: Task | str | Path | None,
    run_dir: Path | str,
    config: RunConfig | None = None,
    model: str | None = None,
    steps: int | None = None,
    progress: Progress | None = None,
    started_at: float | None = None,
    elapsed_s: float | None = None,
) -> RunResult:
    """Run AiScientist on `task` in `run_dir`, or resume the run already there.

    `model` and `steps` override the config (on resume, `steps` may extend the budget);
    `started_at` is the command's start (wall clock; default: now), kept by a resumed run.
    The wall-time budget counts from this call on from `elapsed_s`, the seconds the run took before
    it (a bench cell's earlier sessions); without it a new run counts from this call, a resumed one
    from its call log. Raises TaskError for bad input; KeyboardInterrupt leaves a resumable run."""
    entered = time.monotonic()
    run_dir = Path(run_dir)
    from aiscientist.workspace import Workspace

    if is_run_folder(run_dir):
        info = _load_info(run_dir)
        if steps is not None and steps != info.steps:
            info = info.model_copy(update={"steps": steps, "finished": False})
        if info.finished and RunPaths(run_dir).result.is_file():
            return RunResult.model_validate_json(RunPaths(run_dir).result.read_text())
        repairs = repair_interrupted(run_dir)
        ws = Workspace.open(run_dir)
        for kind, payload in repairs:
            ws.events.record("orchestrator", kind, payload)
        resumed = True
    else:
        if task is None:
            raise TaskError(run_dir, "run_dir", f"not a run folder to resume ({RUN_INFO} missing)")
        config = config or RunConfig()
        task = task if isinstance(task, Task) else load_task(task)
        info = RunInfo(
            model=model or config.model,
            steps=steps or config.steps or task.budget.steps,
            wall_time_s=config.wall_time_s or task.budget.wall_time_s,
            config=config,
            started_at=started_at or time.time(),
        )
        check_model(info)  # an unknown model or a missing key fails before anything is created
        ws = Workspace.create(task, run_dir, file_bus=config.file_bus, sandbox=config.sandbox)
        resumed = False
    _save(ws, info)
    forget_run(run_dir)  # the budget tracker is rebuilt from this run's own call log
    ctx = RunContext(
        ws=ws,
        agent=info.config.arm,
        model=info.model,
        steps=info.steps,
        seed=info.config.seed,
        config=info.config,
        wall_time_s=info.wall_time_s,
    )
    if elapsed_s is not None or not resumed:
        ctx.start_clock((elapsed_s or 0.0) + time.monotonic() - entered)
    tracker = start_tracking(
        parse_spec(info.config.tracking),
        ws.paths,
        f"{ws.task.name} {info.config.arm}",
        {"task": ws.task.name, "agent": info.config.arm, "model": info.model, "steps": info.steps,
         "config": info.config.model_dump(mode="json")},
        {"agent": info.config.arm, "task": ws.task.name},
        ws.task.metric.direction if ws.task.metric else None,
    )  # fmt: skip
    if tracker is not None:
        ws.on_step.append(tracker.catch_up)
    started = time.monotonic()
    with ExitStack() as stack:
        conn = stack.enter_context(closing(sqlite3.connect(ws.paths.checkpoints, check_same_thread=False)))
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # survives a killed process; only power loss can drop the last commit
        orchestrator = Orchestrator(ctx, SqliteSaver(conn))
        stack.enter_context(ws.watch())
        ws.events.record(
            "orchestrator",
            "run.resume" if resumed else "run.start",
            {"model": info.model, "steps": info.steps, "arm": info.config.arm, "steps_done": ctx.steps_done()},
        )
        # a run given a larger step budget, or stopped by a failing model, is reopened
        reopen = ctx.steps_left() > 0 or (info.stop_reason is not None and info.stop_reason.resumable)
        try:
            final_state = orchestrator.run(reopen, (lambda state: progress(snapshot(ctx, state))) if progress else None)
        except KeyboardInterrupt:
            ws.events.record("orchestrator", "run.interrupted", {"steps_done": ctx.steps_done()})
            _save(ws, info.model_copy(update={"stop_reason": StopReason.INTERRUPTED}))
            if tracker is not None:
                tracker.close()
            raise
    stop_reason = StopReason(final_state.get("stop_reason") or StopReason.FINISHED)
    detail = final_state.get("stop_detail", "")
    resumable = stop_reason.resumable
    result = finish(ctx, info, stop_reason, detail, final=not resumable)
    ws.events.record(
        "orchestrator",
        "run.stopped" if resumable else "run.end",
        {
            "stop_reason": stop_reason.value,
            "stop_detail": detail,
            "best_step": result.best_step,
            "best_metric": result.best_metric,
            "session_s": round(time.monotonic() - started, 3),
        },
    )
    _save(ws, info.model_copy(update={"finished": not resumable, "stop_reason": stop_reason}))
    if tracker is not None:
        tracker.close()
    forget_run(run_dir)  # closes its call log; a later client rebuilds the tracker from it
    return result


def repair_interrupted(run_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """Undo what a kill can leave half-done; returns (event kind, payload) per repair.

    A step.json left empty or half-written never reached `experiment.end`: it is
    removed, and the engine runs that step again under the same number (as for a step
    that crashed mid-run). A pending record whose end event is on disk is made visible. A blob
    half-copied into the snapshot store by a killed snapshot is removed."""
    repairs: list[tuple[str, dict[str, Any]]] = []
    for path in RunPaths(run_dir).step_records():
        try:
            StepRecord.model_validate_json(path.read_text())
        except ValueError:
            path.unlink()
            repairs.append(
                (
                    "step.record_torn",
                    {
                        "step": int(path.parent.name.removeprefix("step_")),
                        "action": "removed; the step is redone under the same number",
                    },
                )
            )
    ended = _ended_steps(run_dir)
    for pending in RunPaths(run_dir).pending_records():
        step = int(pending.parent.name.removeprefix("step_"))
        if not (pending.parent / STEP_RECORD).exists() and ended.get(step) == folder_hashes(pending.parent):
            pending.replace(pending.parent / STEP_RECORD)  # its end event is on disk: finish the commit
            repairs.append(
                (
                    "step.record_completed",
                    {"step": step, "action": "the record whose end event was written is made visible"},
                )
            )
    for incoming in snapshots.clear_incoming(RunPaths(run_dir)):
        repairs.append(("snapshot.incoming_removed", {"path": incoming}))
    return repairs


def _ended_steps(run_dir: Path) -> dict[int, dict[str, str]]:
    """The file hashes of every `experiment.end` event, by step."""
    events = RunPaths(run_dir).events
    ended = {}
    for line in events.read_text().splitlines() if events.is_file() else []:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("kind") == "experiment.end" and "files" in event.get("payload", {}):
            ended[event["payload"]["step"]] = event["payload"]["files"]
    return ended


def check_model(info: RunInfo) -> None:
    """Raise ModelConfigError for a model that cannot be used as configured."""
    make_client(info.model, None, "orchestrator", load_llm_config(info.model, info.config.models_file))


def finish(ctx: RunContext, info: RunInfo, stop_reason: StopReason, detail: str = "", final: bool = True) -> RunResult:
    """result.json (`experiment.finish`), with this run's config and model usage."""
    tokens, cost = ctx.usage()
    config = {**info.config.model_dump(mode="json"), "model": info.model, "steps": info.steps, "arm": info.config.arm}
    result = finish_run(
        ctx.ws,
        info.config.arm,
        ctx.step_records(),
        stop_reason,
        detail,
        final=final,
        config=config,
        wall_time_s=round(ctx.elapsed_s(), 3),
        started_at=info.started_at,
        **cache_fields(call_usage(read_records(ctx.ws.paths.llm_calls))),
        tokens=tokens,
        cost=round(cost, 6),
    )
    ctx.ws.refresh_map()
    return result


def snapshot(ctx: RunContext, state: dict[str, Any]) -> dict[str, Any]:
    """What the live display shows."""
    task = ctx.task
    records = ctx.step_records()
    best = ctx.best_step()
    tokens, cost = ctx.usage()
    last = records[-1] if records else None
    return {
        "task": task.name,
        "arm": ctx.config.arm,
        "stage": state.get("stage", ""),
        "decision": state.get("decision", 0),
        "steps_done": ctx.steps_done(),
        "steps": ctx.steps,
        "best": best.metric if best else None,
        "best_step": best.step if best else None,
        "baseline": task.baseline,
        "direction": task.metric.direction if task.metric else None,
        "metric": task.metric.label if task.metric else "",
        "tokens": tokens,
        "cost": cost,
        "last": state.get("last_outcome", ""),
        "last_step": last.model_dump(include={"step", "eligible", "cause", "error"}) | {"eligible": last.eligible}
        if last
        else None,
    }


def _load_info(run_dir: Path) -> RunInfo:
    path = RunPaths(run_dir).run_info
    try:
        return RunInfo.model_validate_json(path.read_text())
    except ValidationError as err:
        first = err.errors()[0]
        raise TaskError(
            path, ".".join(map(str, first["loc"])) or "(file)", f"unreadable run state: {first['msg']}"
        ) from None


def _save(ws: Any, info: RunInfo) -> None:
    path = ws.paths.run_info
    write_atomic(path, info.model_dump_json(indent=1))


__all__ = ["solve", "RunInfo", "is_run_folder"]
