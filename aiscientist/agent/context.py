"""One agent run's context, the same for the orchestrator, its specialists, the flat
agent and every bench baseline: workspace, model clients, budgets, step charging,
the replay journal and the code helpers agents share.

Model calls go through `complete` (one client per role, one run-wide budget). A step
(`run_step`) is charged with the tokens and money the run used since the previous
step, read from the run's budget tracker, so calls made in earlier sessions of a
resumed run are counted too.
"""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiscientist.agent.journal import Journal
from aiscientist.agent.loop import call_model
from aiscientist.agent.outcome import StopReason, StopRun
from aiscientist.config import RunConfig
from aiscientist.experiment import StepRecord
from aiscientist.gitrepo import git
from aiscientist.integrity import read_regular
from aiscientist.llm import BudgetLimits, Completion, LLMClient, load_llm_config, make_client
from aiscientist.llm.budget import tracker_for_run
from aiscientist.task import Task, expand_globs

if TYPE_CHECKING:
    from aiscientist.workspace import Workspace


class StepBudgetExhausted(StopRun):
    """The run has used all its assigned steps."""

    def __init__(self, detail: str = ""):
        super().__init__(StopReason.STEP_BUDGET, detail)


@dataclass
class RunContext:
    ws: Workspace
    agent: str  # the name step records carry: a bench agent or an ablation arm
    model: str | None
    steps: int  # the run's step budget
    seed: int | None = None  # the offline policy's (None: the models file's)
    config: RunConfig = field(default_factory=RunConfig)
    options: dict[str, Any] = field(default_factory=dict)
    wall_time_s: float | None = None
    _clients: dict[str, LLMClient] = field(default_factory=dict)
    _steps: dict[str, tuple[int, StepRecord]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def task(self) -> Task:
        return self.ws.task

    @property
    def submission(self) -> Path:
        return self.ws.paths.submission

    @cached_property
    def journal(self) -> Journal:
        return Journal(self.ws.paths.state / "journal.jsonl")

    @property
    def rng(self) -> random.Random:
        """A generator seeded by the run and the number of steps done, so a resumed
        run does not replay the choices it already made."""
        return random.Random(f"{self.seed or 0}:{self.steps_done()}")

    # ---- model ---------------------------------------------------------------------

    def client(self, role: str) -> LLMClient:
        if self.model is None:
            raise RuntimeError(f"agent {self.agent} needs a model (--model)")
        with self._lock:
            if role not in self._clients:
                limits = BudgetLimits(tokens=self.config.max_tokens, cost_usd=self.config.max_cost_usd, wall_time_s=self.wall_time_s)
                budget = limits.model_dump() if limits != BudgetLimits() else None  # None keeps the models file's
                llm_config = load_llm_config(self.model, self.config.models_file, budget=budget, offline_max_steps=self.steps, seed=self.seed)
                self._clients[role] = make_client(self.model, self.ws.paths.root, role, llm_config)
            return self._clients[role]

    def complete(self, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Completion:
        """One model call with `role`'s client. Tool calls rejected before they could
        run (bad JSON, unknown tool, arguments not matching the schema) become events."""
        return call_model(self.client(role), self.ws, role, messages, tools)

    def usage(self) -> tuple[int, float]:
        """(tokens, cost) used by the run so far, earlier sessions included."""
        used = tracker_for_run(self.ws.paths.root, BudgetLimits()).used()
        return used.tokens, used.cost

    def elapsed_s(self) -> float:
        return tracker_for_run(self.ws.paths.root, BudgetLimits()).elapsed_s()

    def out_of_time(self) -> bool:
        return self.wall_time_s is not None and self.elapsed_s() >= self.wall_time_s

    # ---- steps ---------------------------------------------------------------------

    def step_records(self) -> list[StepRecord]:
        """Every recorded step, in order. Asked for several times per step, so parsed
        records are kept: only the two newest step folders are checked again (a step's
        record changes only while it runs or right after, when the watcher may mark it
        invalid), older ones are final."""
        folder = self.ws.paths.experiments
        names = sorted(n for n in os.listdir(folder) if n.startswith("step_")) if folder.is_dir() else []
        out = []
        for i, name in enumerate(names):
            cached = self._steps.get(name)
            if cached is None or i >= len(names) - 2:
                try:
                    stamp = os.stat(folder / name / "step.json").st_mtime_ns
                    if cached is None or cached[0] != stamp:
                        cached = self._steps[name] = (stamp, StepRecord.model_validate_json((folder / name / "step.json").read_text()))
                except (FileNotFoundError, ValueError):
                    continue  # running, or interrupted before its record was complete
            out.append(cached[1])
        return out

    def steps_done(self) -> int:
        return len(self.step_records())

    def steps_left(self) -> int:
        return max(0, self.steps - self.steps_done())

    def run_step(self, hypothesis: str) -> StepRecord:
        """Run the task's experiment commands once on the current code (one counted
        step), charged with what the run spent since the previous step."""
        if self.steps_left() <= 0:
            raise StepBudgetExhausted(f"all {self.steps} steps are used")
        tokens, cost = self.usage()
        steps = self.step_records()
        tokens, cost = max(0, tokens - sum(s.tokens for s in steps)), max(0.0, cost - sum(s.cost for s in steps))
        return self.ws.engine.run_step(self.agent, hypothesis, tokens=tokens, cost=cost)

    # ---- code ----------------------------------------------------------------------

    def editable_files(self) -> list[str]:
        """Editable files present in submission/, relative to it."""
        return [p for p in expand_globs(self.submission, self.task.editable_globs) if self.task.is_editable(p)]

    def read_code(self, rel: str) -> str:
        data = read_regular(self.submission, rel)  # never follow a link the experiment code planted
        return data.decode(errors="replace") if data is not None else ""

    def write_code(self, rel: str, text: str) -> None:
        """Write an editable file through the workspace's role-scoped API."""
        self.ws.scope("agent").write(f"submission/{rel}", text)

    def reset_to_baseline(self) -> None:
        """Put every editable file back to its baseline version (git)."""
        files = self.editable_files()
        if files:
            git(self.ws.paths, "checkout", self.ws.engine.BASELINE_TAG, "--", *files)

    def code_of_step(self, step: int) -> dict[str, str]:
        """The editable files as snapshotted by `step`."""
        code = self.ws.paths.step_dir(step) / "code"
        return {rel: (code / rel).read_text(errors="replace") for rel in expand_globs(code, ["**/*"])}

    def restore_step(self, step: int) -> None:
        for rel, text in self.code_of_step(step).items():
            self.write_code(rel, text)
