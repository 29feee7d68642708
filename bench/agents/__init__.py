"""The agents the benchmark compares, by name.

Importing this package registers the offline policies of the baselines' roles,
so `--model offline` drives every agent end to end.
"""

from __future__ import annotations

import importlib

from bench.agents.base import Agent, RunContext, StepBudgetExhausted

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


class UnknownAgent(ValueError):
    pass


def get_agent(name: str) -> Agent:
    """A fresh agent object for `name` (UnknownAgent lists the known names)."""
    if name not in AGENTS:
        raise UnknownAgent(f"unknown agent {name!r}; known agents: {', '.join(AGENTS)}")
    module, cls = AGENTS[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def _register_policies() -> None:
    from bench.agents import policies

    policies.register()


_register_policies()

__all__ = ["AGENTS", "Agent", "RunContext", "StepBudgetExhausted", "UnknownAgent", "get_agent"]
