"""The agents the benchmark compares, by name.

An agent's `solve(ctx)` works in the run's workspace and spends its step budget
through `ctx.run_step(hypothesis)` (aiscientist/agent/context.py), which runs the
task's command list through the experiment engine and writes
`experiments/step_NNNN/step.json`: the same trajectory record for every agent.

Importing this package registers the offline policies of the baselines' roles,
so `--model offline` drives every agent end to end.
"""

from __future__ import annotations

import importlib
from typing import Protocol

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome

# name -> "module:class", resolved only when the agent is asked for
AGENTS: dict[str, str] = {
    "aiscientist": "bench.agents.aiscientist:AiScientist",
    "aiscientist-nobus": "bench.agents.aiscientist:AiScientistNoBus",
    "aiscientist-flat": "bench.agents.aiscientist:AiScientistFlat",
    "aide": "bench.agents.aide:Aide",
    "ai-scientist": "bench.agents.ai_scientist:AIScientist",
    "linear": "bench.agents.react:Linear",
    "basic": "bench.agents.react:Basic",
    "iterative": "bench.agents.react:Iterative",
    "hpsearch": "bench.agents.hpsearch:HPSearch",
    "external": "bench.agents.external:External",
}


class Agent(Protocol):
    name: str
    needs_model: bool

    def solve(self, ctx: RunContext) -> Outcome:
        """Work until the step budget is spent (or the agent stops); return why it stopped."""
        ...


class UnknownAgent(ValueError):
    pass


def get_agent(name: str) -> Agent:
    """A fresh agent object for `name` (UnknownAgent lists the known names)."""
    if name not in AGENTS:
        raise UnknownAgent(f"unknown agent {name!r}; known agents: {', '.join(AGENTS)}")
    module, cls = AGENTS[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def _register_policies() -> None:
    from aiscientist.offline import register_role_policy
    from bench.agents import contribution_judge

    register_role_policy(contribution_judge.ROLE, contribution_judge.offline_policy, replace=True)


_register_policies()

__all__ = ["AGENTS", "Agent", "UnknownAgent", "get_agent"]
