"""The one toolbox builder: every agent's tools for a role, picked from the tool table
(`toolsets`) out of the kernel's tools bound to a file scope."""

from __future__ import annotations

from collections.abc import Callable

from aiscientist.agent.context import RunContext
from aiscientist.agent.shell import shell_tool
from aiscientist.agent.tools import Tool, Toolbox, file_tools, finish_tool
from aiscientist.agent.toolsets import pick

FINISH = "End your work and return a short summary to the orchestrator."


def build_toolbox(
    ctx: RunContext,
    role: str,
    scope_role: str | None = None,
    extra: Callable[[Toolbox], list[Tool]] | None = None,
    finish: str = FINISH,
) -> Toolbox:
    """The tools the table gives `role` in this run's agent, bound to `scope_role`'s file scope;
    `extra(box)` adds tools that need the box (run_experiment, submit)."""
    scope = ctx.ws.scope(scope_role or role)
    box = Toolbox()
    extras = extra(box) if extra else []
    available = [*file_tools(scope, box), finish_tool(finish), shell_tool(ctx.ws, scope.role, box), *extras]
    return pick(ctx.agent, role, available, box)
