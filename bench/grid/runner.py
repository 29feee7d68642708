"""The benchmark protocol: agents × tasks × rounds, each run in its own workspace.

An output folder holds `grid.json` (the grid as last requested), `runs/<task>/<agent>/round_<k>/`
(`ws/`, then `result.json` written last to mark the run finished, `labels.json`, `error.txt`) and
`baselines/<task>/baseline.json` (the unchanged code measured once). A finished run is never
redone; an interrupted one is reopened and continues with the steps it has left.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason, StopRun
from aiscientist.experiment.finish import finish_run, measure_baseline
from aiscientist.llm import read_records
from aiscientist.llm.config import load_llm_config
from aiscientist.llm.provider.backends import backend_kind
from aiscientist.llm.types import BudgetExhausted, ModelError, ModelUnavailable
from aiscientist.records.accounting import cache_fields, call_usage, run_usage, successful
from aiscientist.records.cell import GRID_FILE, BaselinePaths, CellPaths, CellSummary
from aiscientist.records.paths import RunPaths, write_atomic
from aiscientist.records.step import StepRecord, load_steps
from aiscientist.task import Task, TaskError, load_task
from aiscientist.tracking import grid_parent, parse_spec, start_tracking
from aiscientist.util import untrusted
from aiscientist.workspace import Workspace
from bench.agents import agent_entry, agent_names, get_agent
from bench.grid.executors import open_executor, pool_shape, thread_env
from bench.grid.progress import GridProgress
from bench.grid.spec import GridConfig, RunSpec
from bench.grid.timing import Timing
from bench.paper.grading import grade_task
from bench.paper.reproduce import GRADE_FILE
from bench.scoring.contribution_judge import judge_diff
from bench.scoring.embed import EmbedderUnavailable, code_text, embedder_name, get_embedder
from bench.scoring.fml_metrics import range_of
from bench.scoring.metrics import diversity, summarize_steps

KIND_NAMES = {"improve": "metric-driven task", "reproduce": "paper task"}


def run_specs(config: GridConfig) -> list[RunSpec]:
    """Every run of the grid (tasks are loaded here, so bad input fails before any work)."""
    specs = []
    for path in config.tasks:
        task = load_task(path)
        unfit = [a for a in config.agents if task.kind not in agent_entry(a).kinds]
        if unfit:
            fit = [a for a in agent_names() if task.kind in agent_entry(a).kinds]
            raise TaskError(
                path,
                "agents",
                f"{', '.join(unfit)} cannot work on a {KIND_NAMES[task.kind]} (kind {task.kind}); "
                f"{task.kind} tasks take {', '.join(fit)}",
            )
        for agent in config.agents:
            for k in range(1, config.rounds + 1):
                specs.append(RunSpec(task_path=Path(path).resolve(), task=task.name, agent=agent, round=k))
    return specs


def is_finished(spec: RunSpec, out: Path) -> bool:
    return spec.cell(out).result.is_file()


def _seed(spec: RunSpec, base: int) -> int:
    return int(hashlib.sha256(f"{base}:{spec.task}:{spec.agent}:{spec.round}".encode()).hexdigest()[:8], 16)


def execute_run(spec: RunSpec, config: GridConfig, out: Path) -> str:
    """Run (or continue) one agent on one task; write result.json when done."""
    cell = spec.cell(out)
    if is_finished(spec, out):
        return "skipped"
    agent = get_agent(spec.agent)
    if getattr(agent, "needs_model", False) and not backend_kind(config.model or "").local:
        importlib.import_module("litellm")  # a worker's one-off import (seconds) is no cell's time
    timing = Timing(cell)  # the cell's clock: its wall time, TTFE and a --wall-time budget count from here
    task = load_task(spec.task_path)
    tracker = start_tracking(
        parse_spec(config.tracking),
        cell.run,
        f"{spec.task} {spec.agent} round {spec.round}",
        {"task": spec.task, "agent": spec.agent, "round": spec.round, "model": config.model, "steps": config.steps},
        {"agent": spec.agent, "task": spec.task, "round": str(spec.round)},
        task.metric.direction if task.metric else None,
        parent=config.tracking_parent,
        group=config.tracking and out.name,
    )
    options, seed, ws_dir = config.options.get(spec.agent, {}), _seed(spec, config.seed), cell.ws
    own = getattr(agent, "creates_workspace", False)
    if ws_dir.exists() and not (cell.run.run_info if own else cell.run.setup_done).is_file():
        untrusted.remove_tree(ws_dir.parent, ws_dir.name)  # made half-way before a crash: start over (any depth)
    if own:
        args = (spec.task_path, ws_dir, config.model, config.steps, seed, config.sandbox, options)
        stop = _guard(lambda: agent.solve_run(*args, wall_time_s=config.wall_time_s, elapsed_s=timing.elapsed()))
        ws = Workspace.open(ws_dir)
    else:
        ws = Workspace.open(ws_dir) if ws_dir.exists() else Workspace.create(task, ws_dir, sandbox=config.sandbox)
        ws.engine.env.update(thread_env())
        ctx = RunContext(
            agent=spec.agent, ws=ws, model=config.model, steps=config.steps, seed=seed, options=options,
            wall_time_s=config.wall_time_s,
        )  # fmt: skip
        ctx.start_clock(timing.elapsed())  # the cell's time so far: earlier sessions and this one's setup
        ws.on_step += [tracker.catch_up] if tracker else []
        stop = Outcome(stop=StopReason.STEP_BUDGET) if ctx.steps_left() == 0 else _guard(lambda: agent.solve(ctx))
    summary = summarize_cell(spec, config, task, ws, out, stop, timing.close(), timing.first_started)
    cell.error.unlink(missing_ok=True)
    write_atomic(cell.result, summary.model_dump_json(indent=1))  # the live progress reads it meanwhile
    if tracker is not None:
        tracker.close()
    return str(stop)


def _guard(solve: Callable[[], Outcome]) -> Outcome:
    """Run an agent; the ways a run legitimately ends become its outcome."""
    try:
        return solve()
    except StopRun as stop:  # the step budget, or a model error inside a tool loop
        return stop.outcome
    except BudgetExhausted as err:
        return Outcome(stop=err.stop, detail=str(err))
    except ModelUnavailable as err:
        return Outcome(stop=StopReason.MODEL_UNAVAILABLE, detail=str(err)[:600])
    except ModelError as err:
        return Outcome(stop=StopReason.MODEL_ERROR, detail=str(err)[:600])


def summarize_cell(
    spec: RunSpec,
    config: GridConfig,
    task: Task,
    ws: Workspace,
    out: Path,
    stop: Outcome,
    wall: float,
    started_at: float | None = None,
) -> CellSummary:
    """The run's end (`experiment.finish`), then diversity, judge labels and the bench summary;
    `started_at` (the cell's start, wall clock) gives the time to first experiment."""
    cell = spec.cell(out)
    steps = load_steps(ws.paths)
    direction = task.metric_direction or "max"
    measured = shared_baseline(task, out, config.sandbox) if task.kind == "improve" else {}
    calls = call_usage(read_records(ws.paths.llm_calls))
    tokens, cost = run_usage(calls, steps)
    result = finish_run(
        ws,
        spec.agent,
        steps,
        stop.stop,
        stop.detail,
        wall_time_s=wall,
        started_at=started_at,
        tokens=tokens,
        cost=cost,
        baseline=task.baseline if task.baseline is not None else measured.get("val"),
        config={"model": config.model, "steps": config.steps, "wall_time_s": config.wall_time_s, "round": spec.round},
        **cache_fields(calls),
    )
    good = [s for s in steps if successful(s)]
    diversity, embedder, diversity_note = _diversity(task, ws, good, config.embedder)
    labels = label_steps(task, ws, good, cell, config.judge_model or config.model or "offline")
    counted = summarize_steps(steps, direction)
    return CellSummary(
        result=result,
        round=spec.round,
        kind=task.kind,
        baseline_test=measured.get("test"),
        has_test=bool(task.test_commands),
        assigned=config.steps,
        curve=counted["curve"],
        experiment_time_s=counted["experiment_time_s"],
        diversity=diversity,
        embedder=embedder,
        diversity_note=diversity_note,
        labels=labels,
        judge_tokens=call_usage(read_records(RunPaths(cell.judge).llm_calls)).tokens,
        rubric_score=_rubric(task, ws, cell, config),
        score_range=range_of(task.name, direction, task.score_range),
        error=None if stop.stop.normal else str(stop),
    )


def shared_baseline(task: Task, out: Path, sandbox: str) -> dict[str, Any]:
    """The unchanged code's validation and hidden-test metrics, measured (by the one baseline
    measurement, `experiment.finish.measure_baseline`) once per task of the grid, under a file
    lock, so parallel workers share it."""
    import fcntl

    folder = BaselinePaths.of(out, task.name)
    folder.root.mkdir(parents=True, exist_ok=True)
    record = folder.record
    with open(folder.lock, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.is_file():
            return json.loads(record.read_text())
        untrusted.remove_tree(folder.ws.parent, folder.ws.name)
        started = time.monotonic()
        step, result = measure_baseline(Workspace.create(task, folder.ws, sandbox=sandbox), started=started)
        test = result.test
        measured = {
            "val": step.metric if step.eligible else None,
            "test": test.metric if test else None,
            "error": step.error or (test.error if test else None),
            "baseline_s": result.baseline_s,  # setup and the measurement: shown apart from the cells' TTFE
        }
        record.write_text(json.dumps(measured, indent=1))
        return measured


def _diversity(
    task: Task, ws: Workspace, good: list[StepRecord], prefer: str
) -> tuple[float | None, str | None, str | None]:
    """The successful steps' code diversity, the embedder that measured it, and why it is
    missing when no code embedder is installed (a plain `pip install`)."""
    if not good:
        return None, None, None
    texts = [code_text(task, ws.paths.root / s.code_path) for s in good]
    try:  # one code: its vectors coincide, at distance 0 from their centroid (no model to load, ~8 s)
        embedder = get_embedder(prefer) if len(set(texts)) > 1 else None
        name = embedder.name if embedder else embedder_name(prefer)
    except EmbedderUnavailable as err:
        return None, None, str(err)
    return (diversity([embedder.embed(text) for text in texts]) if embedder else 0.0), name, None


def label_steps(task: Task, ws: Workspace, good: list[StepRecord], cell: CellPaths, model: str) -> dict[str, str]:
    cache = cell.labels
    labels: dict[str, str] = json.loads(cache.read_text()) if cache.is_file() else {}
    for step in good:
        key = str(step.step)
        if key not in labels:
            diff = (ws.paths.root / step.diff_path).read_text(errors="replace")
            labels[key] = judge_diff(task, diff, model, cell.judge)
            cache.write_text(json.dumps(labels, indent=1))
    return labels


def _rubric(task: Task, ws: Workspace, cell: CellPaths, config: GridConfig) -> float | None:
    """Paper tasks: reproduce and grade the final submission against the rubric (once)."""
    if task.kind != "reproduce":
        return None
    record = cell.grade / GRADE_FILE  # the graded tree: its root holds the score
    if record.is_file():
        return float(json.loads(record.read_text())["score"])
    return grade_task(
        task,
        ws.paths.submission,
        config.judge_model or config.model or "offline",
        out=cell.grade,
        sandbox=config.sandbox,  # the grid's sandbox, never a silent fallback to the host
    ).score


class CellFailed(RuntimeError):
    """A job's failure as it crosses back from a worker: one message, so it always unpickles
    (an exception whose constructor takes other arguments broke the whole process pool)."""


def _worker_run(spec: RunSpec, config: GridConfig, out: Path) -> str:
    try:
        return execute_run(spec, config, out)
    except BaseException as err:
        cell = spec.cell(out)
        cell.root.mkdir(parents=True, exist_ok=True)
        cell.error.write_text(traceback.format_exc())
        if isinstance(err, Exception):
            raise CellFailed(f"{type(err).__name__}: {err}") from None
        raise


def _baseline_job(task: Task, out: Path, sandbox: str) -> dict[str, Any]:
    try:
        return shared_baseline(task, out, sandbox)
    except Exception as err:
        raise CellFailed(f"{type(err).__name__}: {err}") from None


def _unmeasured_baselines(todo: list[RunSpec], out: Path) -> list[Task]:
    """The improve tasks of these runs whose baseline is not measured yet."""
    paths = {s.task: s.task_path for s in todo if not BaselinePaths.of(out, s.task).record.is_file()}
    return [task for task in map(load_task, paths.values()) if task.kind == "improve"]


def run_grid(config: GridConfig, out: Path, progress: bool = True) -> dict[str, Any]:
    """Run every unfinished run of the grid; return counts and failures."""
    specs = run_specs(config)
    for name in config.agents:
        get_agent(name)  # unknown agent names fail before any work
    out.mkdir(parents=True, exist_ok=True)
    (out / GRID_FILE).write_text(config.model_dump_json(indent=1))
    todo = [s for s in specs if not is_finished(s, out)]
    if todo and config.tracking:  # the cells run as children of one parent run
        grid = config.model_dump(mode="json", exclude={"options", "tracking_parent"})
        config = config.model_copy(update={"tracking_parent": grid_parent(parse_spec(config.tracking), out.name, grid)})
    failures: dict[str, str] = {}
    if todo:
        # the baselines first, as jobs of their own, so no run waits for one at its end
        baselines = _unmeasured_baselines(todo, out)
        jobs: list[Job] = [(f"{t.name}/baseline", _baseline_job, (t, out, config.sandbox)) for t in baselines]
        jobs += [(s.cell(out).label, _worker_run, (s, config, out)) for s in todo]
        workers, slots = pool_shape(len(todo), config.workers or _model_slots(config), config.cores_per_run)
        with GridProgress(specs, config, out, enabled=progress) as live:
            failures = _drain(
                lambda: open_executor(config.executor, config.address, slots), jobs, workers, live.refresh
            )
    return {"runs": len(specs), "ran": len(todo), "failed": failures}


def _model_slots(config: GridConfig) -> int | None:
    """Without --workers, no more cells at once than the model serves requests at once (a
    local llama.cpp server answers one at a time: cells would only queue at it and share its cores)."""
    if not config.model:
        return None
    return load_llm_config(config.model).max_parallel


Job = tuple[str, Callable[..., Any], tuple]


def _drain(open_pool: Callable[[], Any], jobs: list[Job], slots: int, refresh: Callable[[], None]) -> dict[str, str]:
    """Run the jobs in order, `slots` at a time (a shared Ray cluster may have more CPUs
    than the grid asked for); return the failures by job name. A worker that dies (a signal,
    the kernel's out-of-memory killer) fails the jobs it broke, and the rest go on in a new pool."""
    queue, failures = list(jobs), {}
    while queue:
        with open_pool() as pool:
            running: dict[Any, str] = {}
            try:
                while queue or running:
                    while queue and len(running) < slots:
                        name, fn, args = queue.pop(0)
                        running[pool.submit(fn, *args)] = name
                    done, _ = wait(running, timeout=1.0, return_when=FIRST_COMPLETED)
                    for future in done:
                        error = future.exception()
                        if isinstance(error, BrokenProcessPool):
                            raise error
                        name = running.pop(future)
                        if error is not None:
                            failures[name] = str(error) if isinstance(error, CellFailed) else repr(error)
                    refresh()
            except KeyboardInterrupt:
                pool.interrupt(list(running))
                raise
            except BrokenProcessPool:
                for name in running.values():
                    failures[name] = "its worker process died (killed by a signal or out of memory)"
                    print(f"failed: {name}: {failures[name]}", flush=True)
    return failures


def resolve_tasks(names: list[str], root: Path) -> list[Path]:
    """`all` → every bench/tasks/*/task.yaml; a name → bench/tasks/<name> or bench/papers/<name>; else a path."""
    paths: list[Path] = []
    for name in names:
        if name == "all":
            found = sorted(root.glob("tasks/*/task.yaml"))
            if not found:
                raise TaskError(root / "tasks", "tasks", "no task.yaml found for 'all'")
            paths += found
        elif (root / "tasks" / name / "task.yaml").is_file():
            paths.append(root / "tasks" / name / "task.yaml")
        elif (root / "papers" / name / "task.yaml").is_file():
            paths.append(root / "papers" / name / "task.yaml")
        elif Path(name).exists():
            paths.append(Path(name))
        else:
            raise TaskError(name, "tasks", f"not a task name under {root}/tasks or {root}/papers, nor a path")
    return paths
