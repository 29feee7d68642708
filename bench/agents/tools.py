"""The baselines' toolbox: the one builder with the `agent` role's file scope, the shared
`run_experiment` in its JSON rendering, and submit; which tools each baseline offers is
in `aiscientist.agent.toolsets`.
"""

from __future__ import annotations

from collections.abc import Callable

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import experiment_tool
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.agent.tools import Toolbox, submit_tool

ROLE_SCOPE = "agent"


def baseline_toolbox(ctx: RunContext, role: str) -> Toolbox:
    return build_toolbox(
        ctx,
        role,
        scope_role=ROLE_SCOPE,
        extra=lambda box: [
            experiment_tool(ctx, box),
            submit_tool("Declare the work finished; ends the run.", unmeasured(ctx)),
        ],
        finish="End this turn (the code is ready to run, or you are done).",
    )


def unmeasured(ctx: RunContext) -> Callable[[], str | None]:
    """A run may not end by submit before its code was measured once while steps remain: the
    1.5B model submitted as its first reply, a run with nothing but the baseline."""

    def why() -> str | None:
        if ctx.steps_done() == 0 and ctx.steps_left() > 0:
            return f"nothing is measured yet; call run_experiment first ({ctx.steps_left()} steps left)"
        return None

    return why


def system_prompt(role: str, text: str) -> dict[str, str]:
    """`ROLE: <role>` is for people; the offline policy reads the role from the facts line."""
    return {"role": "system", "content": f"ROLE: {role}\n{text.strip()}"}
