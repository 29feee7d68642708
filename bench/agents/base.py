"""What every benchmarked agent gets and must produce.

An agent's `solve(ctx)` works in the run's workspace and spends its step budget
through `ctx.run_step(hypothesis)`, which runs the task's command list through
the experiment engine and writes `experiments/step_NNNN/step.json`: the same
trajectory record for every agent. Model calls go through `ctx.complete`, which
adds their tokens and money to the next step's record.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from aiscientist.agent.outcome import Outcome, StopReason, StopRun
from aiscientist.experiment import StepRecord, load_steps
from aiscientist.gitrepo import git
from aiscientist.integrity import read_regular
from aiscientist.task import Task, expand_globs
from aiscientist.agent.loop import call_model

if TYPE_CHECKING:
    from aiscientist.llm.client import LLMClient
    from aiscientist.llm.types import Completion
    from aiscientist.workspace import Workspace


class StepBudgetExhausted(StopRun):
    """The run has used all its assigned steps."""

    def __init__(self, detail: str = ""):
        super().__init__(StopReason.STEP_BUDGET, detail)


@dataclass
class RunContext:
    """One agent run: its workspace, model, step budget and options."""

    agent: str
    ws: Workspace
    model: str | None
    assigned: int
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    _client: LLMClient | None = None
    _tokens: int = 0
    _cost: float = 0.0

    @property
    def task(self) -> Task:
        return self.ws.task

    @property
    def submission(self) -> Path:
        return self.ws.paths.submission

    @property
    def rng(self) -> random.Random:
        """A generator seeded by the run and the number of steps done, so a resumed
        run does not replay the choices it already made."""
        return random.Random(f"{self.seed}:{self.steps_done()}")

    def steps_done(self) -> int:
        return len(load_steps(self.ws.paths))

    def steps_left(self) -> int:
        return max(0, self.assigned - self.steps_done())

    def client(self, role: str) -> LLMClient:
        if self.model is None:
            raise RuntimeError(f"agent {self.agent} needs a model (--model)")
        if self._client is None:
            from aiscientist.llm import load_llm_config, make_client

            config = load_llm_config(self.model).model_copy(update={"seed": self.seed})
            self._client = make_client(self.model, run_dir=self.ws.paths.root, role=role, config=config)
        return self._client

    def complete(self, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Completion:
        """One model call; its tokens and cost are charged to the next step."""
        completion = call_model(self.client(role), self.ws, role, messages, tools)
        self._tokens += completion.prompt_tokens + completion.completion_tokens
        self._cost += completion.cost
        return completion

    def run_step(self, hypothesis: str) -> StepRecord:
        """Run the task's experiment commands once on the current code (one counted step)."""
        if self.steps_left() <= 0:
            raise StepBudgetExhausted(f"all {self.assigned} steps are used")
        record = self.ws.engine.run_step(self.agent, hypothesis, tokens=self._tokens, cost=self._cost)
        self._tokens, self._cost = 0, 0.0
        return record

    # ---- code helpers the agents share ---------------------------------------------

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


class Agent(Protocol):
    name: str
    needs_model: bool

    def solve(self, ctx: RunContext) -> Outcome:
        """Work until the step budget is spent (or the agent stops); return why it stopped."""
        ...
