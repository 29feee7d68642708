"""The agents the benchmark compares. Each registers once, in its own module
(`aiscientist.agent.registry.register_agent`: class, tools, offline policies, sampling, task
kinds); `MODULES` are the modules that hold them, imported on first lookup. Each agent spends its
step budget through `ctx.run_step`, so every agent leaves the same trajectory record.
"""

from __future__ import annotations

import importlib
from typing import Any

from aiscientist.agent import Agent, WorkspaceAgent  # the kernel's protocols, declared with the other seams
from aiscientist.agent.registry import AGENTS, AgentEntry, UnknownAgent

MODULES = (
    "aiscientist.orchestrator.arms",  # aiscientist and its ablation arms
    "bench.agents.aide",
    "bench.agents.ai_scientist",
    "bench.agents.react",
    "bench.agents.search.aira",
    "bench.agents.search.openevolve",
    "bench.agents.search.ai_scientist_v2",
    "bench.agents.search.autoresearch",
    "bench.agents.search.adaptive",
    "bench.agents.hpsearch",
    "bench.agents.external",
    "bench.peers.agents",  # peers' own released code, each in its own virtual environment
)


def load_all() -> None:
    """Import every agent's module, so the registry holds every agent."""
    for module in MODULES:
        importlib.import_module(module)


def agent_names() -> list[str]:
    load_all()
    return AGENTS.names()


def agent_entry(name: str) -> AgentEntry:
    load_all()
    return AGENTS.get(name)


def agent_class(name: str) -> type:
    return agent_entry(name).cls


def get_agent(name: str) -> Agent | WorkspaceAgent:
    return agent_class(name)()


def check_options(options: dict[str, dict[str, Any]]) -> None:
    """Bad `--option` input fails before any work: an agent with an `options_model` checks its own."""
    for name, values in options.items():
        model = getattr(agent_class(name), "options_model", None)
        if model is not None:
            model.of(name, values)


__all__ = [
    "AGENTS",
    "Agent",
    "AgentEntry",
    "UnknownAgent",
    "WorkspaceAgent",
    "agent_class",
    "agent_entry",
    "agent_names",
    "check_options",
    "get_agent",
    "load_all",
]
