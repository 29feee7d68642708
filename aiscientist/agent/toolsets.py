"""The one table of which tools each agent gives each role: every toolbox is built from it,
`bench agents` prints it and the bench report shows it. AiScientist's arms are written
here; a baseline declares its own row in its module (`register_toolset`)."""

from __future__ import annotations

from aiscientist.agent.tools import Tool, Toolbox

SPECIALIST_TOOLS = ("comprehension", "prioritization", "implementation", "experimentation", "helper")
READ = ("read_file", "list_files", "search_files")
WRITE = (*READ, "write_file", "edit_file")

_AISCIENTIST: dict[str, tuple[str, ...]] = {
    "orchestrator": (*SPECIALIST_TOOLS, *READ, "submit"),
    "comprehension": (*WRITE, "finish"),
    "comprehension-reader": (*READ, "finish"),
    "prioritization": (*WRITE, "finish"),
    "implementation": (*WRITE, "bash", "finish"),
    "experimentation": (*READ, "append_log", "run_experiment", "finish"),
    "helper": (*WRITE, "bash", "finish"),
}

TOOLSETS: dict[str, dict[str, tuple[str, ...]]] = {
    "aiscientist": _AISCIENTIST,
    "aiscientist-nobus": _AISCIENTIST,
    "aiscientist-flat": {"flat": (*WRITE, "append_log", "bash", "run_experiment", "submit")},
}


class UnknownToolset(KeyError):
    pass


def register_toolset(agent: str, roles: dict[str, tuple[str, ...]]) -> None:
    """An agent's row (`{}`: it makes no model calls); registering a different row twice is a bug."""
    if TOOLSETS.get(agent, roles) != roles:
        raise ValueError(f"agent {agent!r} already has another tool set")
    TOOLSETS[agent] = roles


def toolset(agent: str, role: str) -> tuple[str, ...]:
    try:
        return TOOLSETS[agent][role]
    except KeyError:
        raise UnknownToolset(
            f"no tool set for agent {agent!r}, role {role!r} in aiscientist.agent.toolsets.TOOLSETS"
        ) from None


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
    return [
        {"agent": agent, "role": role, "tools": list(tools)}
        for agent, roles in TOOLSETS.items()
        for role, tools in roles.items()
    ] + [{"agent": agent, "role": None, "tools": []} for agent, roles in TOOLSETS.items() if not roles]


def markdown() -> str:
    lines = ["| agent | role | tools |", "|---|---|---|"]
    for row in rows():
        tools = row["tools"]
        shown = ", ".join(tools) if tools else "(no tool calls)"  # type: ignore[arg-type]
        lines.append(f"| {row['agent']} | {row['role'] or '–'} | {shown} |")
    return "\n".join(lines)
