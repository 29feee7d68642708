"""Every agent by name, each registered once, in its own module (`register_agent`): its class,
the tools each of its roles is given, its roles' offline policies and sampling, and the task
kinds it takes. The kernel reads tool sets (`toolsets`) and sampling (`RunContext.client`)
here; the offline model dispatches to the policies (`llm.offline`); `bench agents` prints it.
The kernel itself registers no agent: AiScientist's arms register in `orchestrator.arms`,
the bench's agents in their modules under `bench/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import get_args

from aiscientist.llm.offline.backend import Handler, register_role_policy
from aiscientist.task.model import TaskKind
from aiscientist.util.registry import Registry


class UnknownAgent(ValueError):
    pass


@dataclass(frozen=True)
class AgentEntry:
    name: str
    cls: type  # the agent (`Agent` or `WorkspaceAgent`), made with no arguments
    tools: Mapping[str, tuple[str, ...]]  # role -> the tools it is offered; {}: the agent calls no model
    policies: Mapping[str, Handler] = field(default_factory=dict)  # role -> its offline policy (else `solo`)
    sampling: Mapping[str, Mapping[str, float | bool]] = field(default_factory=dict)  # role -> settings over the file's
    kinds: tuple[TaskKind, ...] = ("improve",)  # the task kinds it works on


AGENTS: Registry[AgentEntry] = Registry("agent", UnknownAgent)


def register_agent(
    name: str,
    cls: type,
    tools: Mapping[str, tuple[str, ...]],
    policies: Mapping[str, Handler] | None = None,
    sampling: Mapping[str, Mapping[str, float | bool]] | None = None,
    kinds: tuple[TaskKind, ...] = ("improve",),
) -> AgentEntry:
    """The one registration of an agent; its offline policies go to the offline model's registry."""
    unknown = set(kinds) - set(get_args(TaskKind))
    if unknown:
        raise ValueError(f"agent {name!r}: unknown task kinds {sorted(unknown)}; choose from {get_args(TaskKind)}")
    entry = AgentEntry(name, cls, dict(tools), dict(policies or {}), dict(sampling or {}), kinds)
    for role, handler in entry.policies.items():
        register_role_policy(role, handler)
    return AGENTS.register(name, entry)


def role_sampling(role: str) -> dict[str, float | bool]:
    """The sampling settings a registered agent gives `role` ({}: the models file's)."""
    return next((dict(e.sampling[role]) for e in AGENTS.values() if role in e.sampling), {})
