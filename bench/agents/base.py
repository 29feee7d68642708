"""What every benchmarked agent gets and must produce.

An agent's `solve(ctx)` works in the run's workspace and spends its step budget
through `ctx.run_step(hypothesis)`, which runs the task's command list through
the experiment engine and writes `experiments/step_NNNN/step.json`: the same
trajectory record for every agent. Model calls go through `ctx.complete`, which
adds their tokens and money to the next step's record.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from aiscientist.experiment import StepRecord, git, load_steps
from aiscientist.task import Task, expand_globs

if TYPE_CHECKING:
    from aiscientist.llm.client import LLMClient
    from aiscientist.llm.types import Completion
    from aiscientist.workspace import Workspace


class StepBudgetExhausted(Exception):
    """The run has used all its assigned steps."""


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
        completion = self.client(role).complete(messages, tools=tools, role=role)
        self._tokens += completion.prompt_tokens + completion.completion_tokens
        self._cost += completion.cost
        return completion

    def run_step(self, hypothesis: str) -> StepRecord:
        """Run the task's experiment commands once on the current code (one counted step)."""
        if self.steps_left() <= 0:
            raise StepBudgetExhausted(f"all {self.assigned} steps are used")
        if self.task.kind == "reproduce":
            record = self._reproduce_step(hypothesis)
        else:
            record = self.ws.engine.run_step(self.agent, hypothesis, tokens=self._tokens, cost=self._cost)
        self._tokens, self._cost = 0, 0.0
        return record

    def _reproduce_step(self, hypothesis: str) -> StepRecord:
        """A paper task has no metric: a step runs its commands (`bash reproduce.sh`)
        in the sandbox and records whether they succeeded; the rubric grades the end
        result. Same step folder layout as the engine's (the diff covers every file)."""
        engine, paths = self.ws.engine, self.ws.paths
        step = engine.next_step()
        folder = paths.step_dir(step)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        result = engine.sandbox.run(self.task.commands, cwd=engine.workdir, timeout=self.task.command_timeout_s, env={"MPLBACKEND": "Agg", **engine.env}, writable=[paths.submission], hidden=[*self.task.agent_hidden_paths(), paths.pristine])
        git(paths.submission, "add", "-A")
        (folder / "diff.patch").write_text(git(paths.submission, "diff", "--cached", engine.BASELINE_TAG))
        (folder / "code").mkdir()
        (folder / "stdout.txt").write_text(result.stdout_tail)
        (folder / "stderr.txt").write_text(result.stderr_tail)
        rel = folder.relative_to(paths.root)
        record = StepRecord(step=step, agent=self.agent, hypothesis=hypothesis, started_at=started, commands=result.commands, returncodes=result.returncodes, duration_s=round(result.duration_s, 3), timed_out=result.timed_out, backend=result.backend, success=result.ok, error=result.failure(), diff_path=str(rel / "diff.patch"), code_path=str(rel / "code"), tokens=self._tokens, cost=self._cost)
        (folder / "step.json").write_text(record.model_dump_json(indent=1))
        return record

    # ---- code helpers the agents share ---------------------------------------------

    def editable_files(self) -> list[str]:
        """Editable files present in submission/, relative to it."""
        return [p for p in expand_globs(self.submission, self.task.editable) if self.task.is_editable(p)]

    def read_code(self, rel: str) -> str:
        return (self.submission / rel).read_text(errors="replace")

    def write_code(self, rel: str, text: str) -> None:
        """Write an editable file through the workspace's role-scoped API."""
        self.ws.scope("agent").write(f"submission/{rel}", text)

    def reset_to_baseline(self) -> None:
        """Put every editable file back to its baseline version (git)."""
        files = self.editable_files()
        if files:
            git(self.submission, "checkout", self.ws.engine.BASELINE_TAG, "--", *files)

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

    def solve(self, ctx: RunContext) -> str:
        """Work until the step budget is spent (or the agent stops); return why it stopped."""
        ...
