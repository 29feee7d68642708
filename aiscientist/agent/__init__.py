"""The agent kernel every agent runs on: tools, the shell tool, the tool-set table, one loop,
one turn handler (`agent.turn`, the orchestrator's graph answers its calls through it too),
conversation memory, a typed outcome. Its seams are declared here, in one place, as
mini-swe-agent's package declares its own: a `Model` answers, an `Environment` runs commands,
a `Tool` is offered to the model and called, an `Agent` spends a run (a `WorkspaceAgent` in a
workspace of its own). The implementations are looked up by name: model backends
(`llm.provider.backends.register_backend`), sandboxes (`sandbox.get_sandbox`), agents
(`agent.registry.register_agent`, once per agent in its own module), each a `util.registry.Registry`;
every tool is an `agent.tools.Tool` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aiscientist.agent.outcome import Outcome, StopReason, StopRun

# A tool the model is offered (its schema) and a handler of its validated arguments: one class.
from aiscientist.agent.tools import Tool

# Where commands run: the sandbox's one interface (`run`; local, bwrap, docker implement `execute`),
# declared below the kernel so the sandbox imports nothing of it.
from aiscientist.sandbox import Sandbox as Environment

if TYPE_CHECKING:
    from aiscientist.agent.context import RunContext
    from aiscientist.llm.types import Completion


@runtime_checkable
class Model(Protocol):
    """One model call: messages and tool schemas in, a completion out (`llm.LLMClient`)."""

    def complete(
        self, messages: Iterable[Any], tools: Iterable[dict[str, Any]] | None = None, role: str | None = None
    ) -> Completion: ...


@runtime_checkable
class Agent(Protocol):
    """Spends one run's step budget through `ctx.run_step` and says why it stopped."""

    name: str
    needs_model: bool

    def solve(self, ctx: RunContext) -> Outcome: ...


@runtime_checkable
class WorkspaceAgent(Protocol):
    """An agent that makes its own workspace in `run_dir` (`aiscientist` and its arms run `solve`)."""

    name: str
    needs_model: bool
    creates_workspace: bool

    def solve_run(
        self,
        task_path: Path,
        run_dir: Path,
        model: str,
        steps: int,
        seed: int,
        sandbox: str,
        options: dict[str, Any],
        wall_time_s: float | None = None,
        elapsed_s: float = 0.0,
    ) -> Outcome:
        """`wall_time_s`: the run's wall-clock budget (None: none), counted on from `elapsed_s`, the
        seconds the run has taken before this call (its earlier sessions, its cell's start)."""
        ...


__all__ = ["Agent", "Environment", "Model", "Outcome", "StopReason", "StopRun", "Tool", "WorkspaceAgent"]
