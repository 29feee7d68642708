"""What every agent of one run shares: workspace, model clients, budgets, journal, timing."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from aiscientist.agent.loop import call_model
from aiscientist.config import RunConfig
from aiscientist.experiment import StepRecord
from aiscientist.llm import BudgetLimits, Completion, LLMClient, load_llm_config, make_client
from aiscientist.specialists.journal import Journal
from aiscientist.task import Task


@dataclass
class Runtime:
    ws: Any  # aiscientist.workspace.Workspace
    config: RunConfig
    model: str
    steps: int
    journal: Journal
    wall_time_s: float | None = None
    _clients: dict[str, LLMClient] = field(default_factory=dict)
    _steps: dict[str, tuple[int, StepRecord]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def task(self) -> Task:
        return self.ws.task

    @property
    def agent(self) -> str:
        """The name step records carry: the ablation arm."""
        return self.config.arm

    def client(self, role: str) -> LLMClient:
        with self._lock:
            if role not in self._clients:
                limits = BudgetLimits(tokens=self.config.max_tokens, cost_usd=self.config.max_cost_usd, wall_time_s=self.wall_time_s)
                llm_config = load_llm_config(self.model, self.config.models_file, budget=limits.model_dump(), offline_max_steps=self.steps, seed=self.config.seed)  # None keeps the file's
                self._clients[role] = make_client(self.model, self.ws.paths.root, role, llm_config)
            return self._clients[role]

    def complete(self, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion:
        """One model call with `role`'s client (one client per role, shared run budget).
        Tool calls rejected before they could run (bad JSON, unknown tool, arguments not
        matching the schema) become events."""
        return call_model(self.client(role), self.ws, role, messages, tools)

    def usage(self) -> tuple[int, float]:
        """(tokens, cost) used by the run so far, earlier sessions included."""
        used = self.client("orchestrator").budget.used()
        return used.tokens, used.cost_usd

    def elapsed_s(self) -> float:
        return self.client("orchestrator").budget.elapsed_s()

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

    def out_of_time(self) -> bool:
        return self.wall_time_s is not None and self.elapsed_s() >= self.wall_time_s
