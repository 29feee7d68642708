"""The agents the benchmark compares, by name. Each spends its step budget through
`ctx.run_step`, so every agent leaves the same trajectory record.
"""

from __future__ import annotations

import importlib
from typing import Any

from aiscientist.agent import Agent, WorkspaceAgent  # the kernel's protocols, declared with the other seams

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
    "aira-mcts": "bench.agents.search.aira:AiraMcts",
    "openevolve": "bench.agents.search.openevolve:OpenEvolve",
    "ai-scientist-v2": "bench.agents.search.ai_scientist_v2:AIScientistV2",
    "autoresearch": "bench.agents.search.autoresearch:Autoresearch",
    "adaptive-search": "bench.agents.search.adaptive:AdaptiveSearch",
    "hpsearch": "bench.agents.hpsearch:HPSearch",
    "external": "bench.agents.external:External",
    # peers' own released code (bench/peers), each in its own virtual environment
    "peer-mini-swe-agent": "bench.peers.agents:PeerMiniSweAgent",
    "peer-aide": "bench.peers.agents:PeerAide",
    "peer-openevolve": "bench.peers.agents:PeerOpenEvolve",
}


class UnknownAgent(ValueError):
    pass


def agent_class(name: str) -> type:
    """Importing an agent's module registers what it declares (tool set row, offline policy)."""
    if name not in AGENTS:
        raise UnknownAgent(f"unknown agent {name!r}; known agents: {', '.join(AGENTS)}")
    module, cls = AGENTS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def get_agent(name: str) -> Agent | WorkspaceAgent:
    return agent_class(name)()


def check_options(options: dict[str, dict[str, Any]]) -> None:
    """Bad `--option` input fails before any work: an agent with an `options_model` checks its own."""
    for name, values in options.items():
        model = getattr(agent_class(name), "options_model", None)
        if model is not None:
            model.of(name, values)


def load_all() -> None:
    """Import every agent's module, so the tool-set table holds every row."""
    for name in AGENTS:
        agent_class(name)


__all__ = ["AGENTS", "Agent", "UnknownAgent", "WorkspaceAgent", "agent_class", "check_options", "get_agent", "load_all"]
