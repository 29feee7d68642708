"""One agent run's context, the same for the orchestrator, its specialists, the flat
agent and every bench baseline: workspace, model clients, budgets, step charging,
the replay journal and the code helpers agents share.

Model calls go through `complete` (one client per role, one run-wide budget). A step
(`run_step`) is charged with the tokens and money the run used since the previous
step, read from the run's budget tracker, so calls made in earlier sessions of a
resumed run are counted too.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiscientist.agent.journal import Journal
from aiscientist.agent.loop import call_model
from aiscientist.agent.outcome import StopReason, StopRun
from aiscientist.agent.registry import role_sampling
from aiscientist.config import RunConfig
from aiscientist.experiment import snapshots
from aiscientist.experiment.integrity import READ_LIMIT
from aiscientist.llm import BudgetLimits, Completion, LLMClient, LLMConfig, load_llm_config, make_client
from aiscientist.llm.budget import tracker_for_run
from aiscientist.records import accounting
from aiscientist.records.paths import in_submission
from aiscientist.records.step import StepLog, StepRecord
from aiscientist.task import Task, expand_globs
from aiscientist.util import untrusted
from aiscientist.workspace import guidance

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
    _final_best: tuple[int, StepRecord | None] = (0, None)  # (final records folded, the best of them)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _steps_lock: threading.RLock = field(default_factory=threading.RLock)  # agents expanding in parallel ask too

    @property
    def task(self) -> Task:
        return self.ws.task

    @property
    def submission(self) -> Path:
        return self.ws.paths.submission

    @cached_property
    def journal(self) -> Journal:
        return Journal(self.ws.paths.journal)

    @property
    def rng(self) -> random.Random:
        """A generator seeded by the run and the number of steps done, so a resumed
        run does not replay the choices it already made."""
        return random.Random(f"{self.seed or 0}:{self.steps_done()}")

    # ---- model ---------------------------------------------------------------------

    def llm_config(self, role: str) -> LLMConfig:
        """`role`'s model settings: the models file's, under this run's budget."""
        if self.model is None:
            raise RuntimeError(f"agent {self.agent} needs a model (--model)")
        limits = BudgetLimits(
            tokens=self.config.max_tokens, cost_usd=self.config.max_cost_usd, wall_time_s=self.wall_time_s
        )
        budget = limits.model_dump() if limits != BudgetLimits() else None  # None keeps the models file's
        sampling = role_sampling(role)  # e.g. AIDE samples code at 0.5, as the original does
        cap = sampling.pop("max_tokens", None)  # a role's answer length is a cap: a lower one of the models file stays
        config = load_llm_config(
            self.model, self.config.models_file, budget=budget, offline_max_steps=self.steps, seed=self.seed, **sampling
        )
        if cap is not None and (config.max_tokens is None or cap < config.max_tokens):
            config = config.model_copy(update={"max_tokens": int(cap)})
        return config

    def client(self, role: str) -> LLMClient:
        with self._lock:
            if role not in self._clients:
                self._clients[role] = make_client(self.model or "", self.ws.paths.root, role, self.llm_config(role))
            return self._clients[role]

    def complete(
        self, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, guided: bool = True
    ) -> Completion:
        """One model call with `role`'s client. Tool calls rejected before they could
        run (bad JSON, unknown tool, arguments not matching the schema) become events.
        `guided`: the person's new notes (`workspace.guidance`) ride on the prompt's last message,
        once per role (the orchestrator shows them in its status instead; specialists get them from it)."""
        if guided and (notes := self.guidance.pending(role)):
            messages = [*messages, {"role": "user", "content": guidance.block(notes)}]
            self.guidance.mark(self.ws.events, role, guidance.DELIVERED, notes)
        return call_model(self.client(role), self.ws, role, messages, tools)

    @cached_property
    def model_limits(self) -> BudgetLimits:
        """The run's model budget: its own limits, else the models file's (the same for every role)."""
        return self.llm_config(self.agent).budget if self.model else BudgetLimits()

    @cached_property
    def guidance(self) -> guidance.Guidance:
        return guidance.Guidance(self.ws.paths.root)

    def usage(self) -> tuple[int, float]:
        """(tokens, cost) used by the run so far, earlier sessions included."""
        used = tracker_for_run(self.ws.paths.root, BudgetLimits()).used()
        return used.tokens, used.cost

    def elapsed_s(self) -> float:
        return tracker_for_run(self.ws.paths.root, BudgetLimits()).elapsed_s()

    def start_clock(self, elapsed_s: float) -> None:
        """Count the run's wall time (steps, the model budget) on from `elapsed_s` seconds: the time
        its owner counted since the run began (earlier sessions included), not since the first call."""
        tracker_for_run(self.ws.paths.root, BudgetLimits()).count_from(elapsed_s)

    def out_of_time(self) -> bool:
        return self.wall_time_s is not None and self.elapsed_s() >= self.wall_time_s

    def time_left_s(self) -> float | None:
        """Seconds of the wall-time budget left (None: no wall-time budget)."""
        return None if self.wall_time_s is None else max(0.0, self.wall_time_s - self.elapsed_s())

    # ---- steps ---------------------------------------------------------------------

    @cached_property
    def _steps(self) -> StepLog:
        return StepLog(self.ws.paths)

    def step_records(self) -> list[StepRecord]:
        """Every recorded step, in order (`records.step.StepLog`: asked for many times per
        step, it costs the same at step 1,000 as at step 1)."""
        with self._steps_lock:
            return self._steps.records()

    def best_step(self, before: int | None = None) -> StepRecord | None:
        """`accounting.best_step` over `step_records()` (only steps before `before` if
        given; None for a task without a metric), the final records folded in once."""
        with self._steps_lock:
            return self._best_step(before)

    def _best_step(self, before: int | None) -> StepRecord | None:
        records = self.step_records()
        if self.task.metric is None:
            return None
        direction = self.task.metric.direction
        final = self._steps.final
        folded, best = self._final_best
        best = accounting.best_step([r for r in (best, *final[folded:]) if r is not None], direction)
        self._final_best = (len(final), best)
        if before is not None and best is not None and best.step >= before:  # asked about the past
            return accounting.best_step([r for r in records if r.step < before], direction)
        rest = [r for r in records[len(final) :] if before is None or r.step < before]
        return accounting.best_step([r for r in (best, *rest) if r is not None], direction)

    def steps_done(self) -> int:
        return len(self.step_records())

    def steps_left(self) -> int:
        return max(0, self.steps - self.steps_done())

    def run_step(self, hypothesis: str) -> StepRecord:
        """Run the task's experiment commands once on the current code (one counted
        step), charged with what the run spent since the previous step. Past the step or the
        wall-time budget it ends the run (StopRun) instead; a step already running is not cut short."""
        if self.steps_left() <= 0:
            raise StepBudgetExhausted(f"all {self.steps} steps are used")
        if self.out_of_time():
            raise StopRun(StopReason.WALL_TIME, f"the wall-time budget ({self.wall_time_s:g} s) is used")
        tokens, cost = self.usage()
        steps = self.step_records()
        tokens, cost = max(0, tokens - sum(s.tokens for s in steps)), max(0.0, cost - sum(s.cost for s in steps))
        return self.ws.engine.run_step(self.agent, hypothesis, tokens=tokens, cost=cost)

    # ---- code ----------------------------------------------------------------------

    def editable_files(self) -> list[str]:
        """Editable files present in submission/, relative to it."""
        return [p for p in expand_globs(self.submission, self.task.editable_globs) if self.task.is_editable(p)]

    def read_code(self, rel: str) -> str:
        try:  # never follow a link the experiment code planted
            return untrusted.read_file(self.submission, rel, READ_LIMIT, hard_links=True).decode(errors="replace")
        except untrusted.Unreadable:
            return ""

    def write_code(self, rel: str, text: str) -> None:
        """Write an editable file through the workspace's role-scoped API."""
        self.ws.scope("agent").write(in_submission(rel), text)

    def reset_to_baseline(self) -> None:
        """Put every editable file back to its baseline version (the snapshot store;
        an editable file the baseline lacks is removed)."""
        snapshots.restore(self.ws.paths, self.ws.engine.BASELINE_TAG, self.editable_files())

    def code_of_step(self, step: int) -> dict[str, str]:
        """The editable files as snapshotted by `step`."""
        code = self.ws.paths.step_code(step)
        return {rel: (code / rel).read_text(errors="replace") for rel in expand_globs(code, ["**/*"])}

    def restore_step(self, step: int) -> None:
        for rel, text in self.code_of_step(step).items():
            self.write_code(rel, text)
