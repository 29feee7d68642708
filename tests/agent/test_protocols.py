"""The kernel's seams (aiscientist/agent/__init__.py): every model client, sandbox backend, tool
and bench agent the project has fits the protocol it is declared by."""

from __future__ import annotations

from aiscientist.agent import Agent, Environment, Model, Tool, WorkspaceAgent
from aiscientist.agent.tools import finish_tool, submit_tool
from aiscientist.llm import make_client
from aiscientist.sandbox import get_sandbox
from bench.agents import agent_names, get_agent


def test_each_implementation_fits_its_protocol() -> None:
    assert isinstance(make_client("offline"), Model)
    assert isinstance(get_sandbox("local"), Environment) and isinstance(get_sandbox("bwrap"), Environment)
    assert all(isinstance(tool, Tool) for tool in (finish_tool(), submit_tool()))
    agents = {name: get_agent(name) for name in agent_names()}
    assert [name for name, agent in agents.items() if not isinstance(agent, (Agent, WorkspaceAgent))] == []
    assert [name for name, agent in agents.items() if isinstance(agent, WorkspaceAgent)] == [
        "aiscientist",
        "aiscientist-flat",
        "aiscientist-nobus",
    ]
    assert not isinstance(object(), Agent) and not isinstance(finish_tool(), Environment)
