"""The run folder as one object: create, open (resume), scopes, state, map.

Nothing here stores an absolute path of the run folder: everything is derived
from the folder handed to `create` or `open`, so a copied run folder resumes.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from aiscientist.experiment import snapshots
from aiscientist.experiment.engine import ExperimentEngine
from aiscientist.llm import read_records
from aiscientist.records.accounting import best_step, call_usage, run_usage
from aiscientist.records.paths import (
    PERMISSIONS,
    PERMISSIONS_FILE,
    TASK_RECORD,
    TASK_RECORD_FILE,
    TASK_SOURCE_FILE,
    TASK_TEXT_FILE,
    WORKSPACE_CONFIG,
    RunPaths,
    write_atomic,
)
from aiscientist.records.step import StepRecord, load_steps
from aiscientist.resources import WORKSPACE_TEMPLATE
from aiscientist.sandbox import CommandsResult, Mounts, Sandbox, SandboxSettings, get_sandbox
from aiscientist.task import Task, TaskError
from aiscientist.util import untrusted
from aiscientist.workspace.eventlog import EventLog, now
from aiscientist.workspace.permissions import PermissionsFile, Policy
from aiscientist.workspace.scope import Scope
from aiscientist.workspace.wsmap import MapCache, build_brief_map, build_map

TEMPLATE = WORKSPACE_TEMPLATE


RUN_STATE_BYTES = 4 << 20  # a run folder's own state files are small; a handed-over folder may hold anything


def _run_state(root: Path, rel: str) -> str:
    """A run-state file of a run folder that may have been handed over: read like any untrusted
    file (no link followed, no FIFO opened, bounded), its problem named as the run folder's."""
    try:
        return untrusted.read_file(root, rel, RUN_STATE_BYTES).decode()
    except (untrusted.Unreadable, UnicodeDecodeError) as err:
        raise TaskError(root, "run folder", f"unreadable run state {rel}: {err}") from None


class WorkspaceConfig(BaseModel):
    """`RunPaths.workspace_config`: how the run was created."""

    file_bus: bool = True
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    created_at: str


class RunState(BaseModel):
    """What a run needs to continue, rebuilt from files."""

    steps_done: int
    steps_successful: int
    last_step: int | None = None
    best_step: int | None = None
    best_metric: float | None = None
    best_metrics: dict[str, float] = {}
    llm_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    wall_time_s: float = 0.0


class Workspace:
    def __init__(
        self, task: Task, paths: RunPaths, config: WorkspaceConfig, permissions: PermissionsFile, sandbox: Sandbox
    ):
        self.task, self.paths, self.config, self.permissions = task, paths, config, permissions
        self.events = EventLog(paths.root)
        self.engine = ExperimentEngine(task, paths, _ObservedSandbox(sandbox, self), on_event=self._on_engine_event)
        self.active = "system"
        self.experiment_running: int | None = None
        self.map_cache = MapCache()
        self.commands_running = False
        # (monotonic time, activity, running step, task commands running) at each change
        # of these: the watcher attributes a file change to who was active when it happened
        self._timeline: deque[tuple[float, str, int | None, bool]] = deque(maxlen=1024)
        self.watcher = None
        self.on_step: list[Callable[[int], None]] = []  # called with each step's number once it is recorded
        self._map_dirty = True
        self._map_lock = threading.Lock()

    @property
    def file_bus(self) -> bool:
        return self.config.file_bus

    @classmethod
    def create(
        cls,
        task: Task,
        run_dir: Path | str,
        file_bus: bool = True,
        sandbox: str | SandboxSettings | Sandbox = "auto",
        template: Path = TEMPLATE,
    ) -> Workspace:
        """Lay out a new run folder and set up the baseline. On any failure the
        run folder is removed again (nothing left behind) and the error raised."""
        root = Path(run_dir).absolute()
        if not (template / PERMISSIONS_FILE).is_file():
            raise FileNotFoundError(
                f"workspace template not found at {template} (it ships inside the aiscientist package; reinstall it)"
            )
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise FileExistsError(f"run folder {root} already exists and is not empty; resume it with Workspace.open")
        existed = root.exists()
        box = get_sandbox(sandbox)
        try:
            paths = RunPaths(root)
            shutil.copytree(
                template, root, ignore=shutil.ignore_patterns(".keep", PERMISSIONS_FILE), dirs_exist_ok=True
            )
            paths.state.mkdir(parents=True, exist_ok=True)
            shutil.copy2(template / PERMISSIONS_FILE, paths.permissions)
            permissions = PermissionsFile.load(paths.permissions)
            config = WorkspaceConfig(file_bus=file_bus, sandbox=box.settings, created_at=now())
            paths.workspace_config.write_text(config.model_dump_json(indent=1))
            for log in permissions.logs.values():
                (root / log).parent.mkdir(parents=True, exist_ok=True)
                (root / log).touch()
            task.copy_repository(paths.submission)
            _write_task_folder(task, paths.task)
            ws = cls(task, paths, config, permissions, box)
            created = {"task": task.name, "file_bus": file_bus, "sandbox": box.name, "memory": box.memory_enforcement()}
            ws.events.record("system", "workspace.created", created)
            ws.engine.ensure_setup()
            manifest = paths.pristine_manifest
            ws.events.record(
                "system",
                "protected.manifest",
                {"sha256": hashlib.sha256(manifest.read_bytes()).hexdigest(), "files": ws.engine.protected_manifest()},
            )
            _make_read_only(paths.task)
            ws.refresh_map()
            return ws
        except BaseException:
            untrusted.remove_tree(root.parent, root.name)  # setup's commands ran in it: any depth, no link followed
            if existed:
                root.mkdir()
            raise

    @classmethod
    def open(cls, run_dir: Path | str, sandbox: str | SandboxSettings | Sandbox | None = None) -> Workspace:
        """Rebuild a run from its folder alone (resume after a crash, or a copy)."""
        root = Path(run_dir).absolute()
        paths = RunPaths(root)
        task_json = paths.task_record
        if not task_json.is_file() or not paths.workspace_config.is_file():
            raise TaskError(root, "run folder", f"not a run folder ({TASK_RECORD} or {WORKSPACE_CONFIG} missing)")
        if (why := snapshots.legacy(paths)) is not None:
            raise TaskError(root, "run folder", why)
        try:
            task = Task.model_validate_json(_run_state(root, TASK_RECORD))
            config = WorkspaceConfig.model_validate_json(_run_state(root, WORKSPACE_CONFIG))
        except ValidationError as err:
            raise TaskError(root, "run folder", f"unreadable run state: {err.errors()[0]['msg']}") from None
        permissions = PermissionsFile.parse(_run_state(root, PERMISSIONS), str(paths.permissions))
        ws = cls(task, paths, config, permissions, get_sandbox(config.sandbox if sandbox is None else sandbox))
        ws.events.record("system", "workspace.opened", {"steps_done": len(ws.steps())})
        ws.refresh_map()
        return ws

    def scope(self, role: str) -> Scope:
        """The file API for `role` (raises UnknownRole, a ValueError, for unknown names)."""
        set_name = "file_bus" if self.file_bus else "file_bus_off"
        return Scope(self, role, Policy(self.permissions, set_name, role, self.task))

    def set_active(self, who: str) -> None:
        """Name the role or experiment now working; file changes are attributed to it."""
        self.active = who
        self._note_activity()

    def set_step(self, step: int | None) -> None:
        """Note that an experiment step started (its number) or ended (None)."""
        self.experiment_running = step
        self._note_activity()

    def set_commands(self, running: bool) -> None:
        """Note that the sandbox's commands started or ended."""
        self.commands_running = running
        self._note_activity()

    def activity(self) -> str:
        """Who is acting now: the running experiment (and its caller) or the active role."""
        running = self.experiment_running
        return f"step_{running:04d} ({self.active})" if running is not None else self.active

    def activity_at(self, at: float) -> tuple[str, int | None, bool]:
        """(who was acting, the step running, whether task commands ran) at `time.monotonic()` `at`."""
        for noted, who, step, commands in reversed(list(self._timeline)):
            if noted <= at:
                return who, step, commands
        return self.activity(), self.experiment_running, self.commands_running

    def _note_activity(self) -> None:
        self._timeline.append((time.monotonic(), self.activity(), self.experiment_running, self.commands_running))

    def steps(self) -> list[StepRecord]:
        return load_steps(self.paths)

    def state(self) -> RunState:
        steps = self.steps()
        best = best_step(steps, self.task.metric_direction)
        calls = call_usage(read_records(self.paths.llm_calls))
        tokens, cost = run_usage(calls, steps)
        return RunState(
            steps_done=len(steps),
            steps_successful=sum(s.success for s in steps),
            last_step=steps[-1].step if steps else None,
            best_step=best.step if best else None,
            best_metric=best.metric if best else None,
            best_metrics=best.metrics if best else {},
            llm_calls=calls.calls,
            tokens=tokens,
            cost=cost,
            wall_time_s=calls.wall_time_s,
        )

    def refresh_map(self) -> str:
        with self._map_lock:
            text = build_map(self)
            write_atomic(self.paths.workspace_map, text)
            self._map_dirty = False
            return text

    def map_text(self) -> str:
        """WORKSPACE.md, synced first."""
        return self.refresh_map() if self._map_stale() else self.paths.workspace_map.read_text()

    def brief_map(self) -> str:
        """The map in a few lines (`wsmap.build_brief_map`), for the orchestrator's status."""
        with self._map_lock:
            return build_brief_map(self)

    def sync_map(self) -> None:
        """Bring WORKSPACE.md up to date before someone reads the file itself (the file
        API, a shell command, the run's end); rewriting it after every change would
        cost each step a file replacement that nobody may read."""
        if self._map_stale():
            self.refresh_map()

    def _map_stale(self) -> bool:
        return self._map_dirty or not self.paths.workspace_map.is_file()

    def changed(self) -> None:
        """Something the map shows changed: WORKSPACE.md is out of date until synced."""
        self._map_dirty = True

    def watch(self, flush_s: float = 0.5):
        """Context manager: a file watcher for the duration of a run."""
        from aiscientist.workspace.watcher import Watcher

        return Watcher(self, flush_s=flush_s)

    def _on_engine_event(self, kind: str, payload: dict[str, Any]) -> None:
        # no flush of the watcher here: a change that arrives late is still
        # attributed to the step it happened in (activity_at)
        if kind == "experiment.start":
            self.set_step(payload.get("step"))
        if kind == "experiment.recorded":  # the record is visible now; its end event came first
            self.set_step(None)
            self.changed()
            for listener in self.on_step:
                listener(payload["step"])
            return
        self.events.record(self.active if kind.startswith("experiment") else "system", kind, payload)


class _ObservedSandbox(Sandbox):
    """The engine's sandbox, telling the workspace while commands run (so the
    watcher can tell a task's own preprocessing from anything else)."""

    def __init__(self, inner: Sandbox, ws: Workspace):
        self.inner, self.ws, self.name, self.settings = inner, ws, inner.name, inner.settings

    def execute(
        self, commands: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None, mounts: Mounts
    ) -> CommandsResult:
        if self.ws.experiment_running is None:  # a shell or setup command may read the map
            self.ws.sync_map()
        self.ws.set_commands(True)
        try:
            return self.inner.execute(commands, cwd, timeout, env, mounts)
        finally:
            self.ws.set_commands(False)


def _write_task_folder(task: Task, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = task.summary()
    if len(task.description.strip()) > 2000:
        text += "\n\n## Full description\n\n" + task.description.strip()
    (folder / TASK_TEXT_FILE).write_text(text + "\n")
    for name, source in (("paper", task.paper), ("addendum", task.addendum)):
        if source is not None:
            shutil.copy2(source, folder / f"{name}{source.suffix}")
    (folder / TASK_RECORD_FILE).write_text(task.model_dump_json(indent=1))
    if task.source is not None and task.source.suffix in (".yaml", ".yml") and task.source.is_file():  # its text
        shutil.copy2(task.source, folder / TASK_SOURCE_FILE)


def _make_read_only(folder: Path) -> None:
    for path in folder.rglob("*"):
        path.chmod(0o444 if path.is_file() else 0o555)
    folder.chmod(0o555)
