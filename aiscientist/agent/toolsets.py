"""The one table of which tools each agent gives each role, read from the agents' registrations
(`registry.register_agent`): every toolbox is built from it, `bench agents` prints it and the
bench report shows it. The kernel names no agent; the tool groups below are shared."""

from __future__ import annotations

from aiscientist.agent.registry import AGENTS
from aiscientist.agent.tools import Tool, Toolbox

SPECIALIST_TOOLS = ("comprehension", "prioritization", "implementation", "experimentation", "helper")
READ = ("read_file", "list_files", "search_files")
WRITE = (*READ, "write_file", "edit_file")


class UnknownToolset(KeyError):
    pass


def toolset(agent: str, role: str) -> tuple[str, ...]:
    entry = AGENTS.entries.get(agent)
    if entry is None or role not in entry.tools:
        raise UnknownToolset(
            f"no tool set for agent {agent!r}, role {role!r}: an agent's module registers its roles' tools "
            f"(register_agent); registered agents: {', '.join(AGENTS) or '(none)'}"
        )
    return entry.tools[role]


def pick(agent: str, role: str, available: list[Tool], box: Toolbox) -> Toolbox:
    by_name = {tool.name: tool for tool in available}
    for name in toolset(agent, role):
        if name in SPECIALIST_TOOLS and role == "orchestrator":
            continue  # specialists are called by the orchestrator's graph, not through a toolbox
        if name not in by_name:
            raise UnknownToolset(f"tool {name!r} of {agent}/{role} was not provided")
        box.add(by_name[name])
    return box


def rows() -> list[dict[str, object]]:
    """One row per registered agent and role (`role` None: the agent calls no model)."""
    out: list[dict[str, object]] = []
    for entry in AGENTS.values():
        about = {"kinds": list(entry.kinds)}
        for role, tools in entry.tools.items() or [(None, ())]:
            out.append(
                {
                    "agent": entry.name,
                    "role": role,
                    "tools": list(tools),
                    "offline_policy": role in entry.policies,
                    "sampling": dict(entry.sampling.get(role or "", {})),
                    **about,
                }
            )
    return out


def markdown() -> str:
    lines = ["| agent | role | tools | task kinds |", "|---|---|---|---|"]
    for row in rows():
        tools, kinds = row["tools"], ", ".join(row["kinds"])  # type: ignore[arg-type]
        shown = ", ".join(tools) if tools else "(no tool calls)"  # type: ignore[arg-type]
        lines.append(f"| {row['agent']} | {row['role'] or '–'} | {shown} | {kinds} |")
    return "\n".join(lines)
