"""The baselines' tools: the kernel's tools bound to the `agent` role's file scope, plus
their own `run_experiment`; which ones each baseline offers is in `aiscientist.agent.toolsets`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.shell import shell_tool
from aiscientist.agent.tools import Tool, Toolbox, file_tools, finish_tool, submit_tool
from aiscientist.agent.toolsets import pick

ROLE_SCOPE = "agent"


class RunExperimentArgs(BaseModel):
    hypothesis: str = Field("", description="what this run tests")


def step_report(record: Any, metric_label: str) -> str:
    """What an agent is told about one experiment step."""
    if record.success:
        extra = " (constraint violated: not eligible)" if record.constraint_violated else ""
        return f"step {record.step}: {metric_label} = {record.metric:.6g}{extra}"
    return f"step {record.step}: FAILED: {record.error}"


def step_result(record: Any, steps_left: int) -> dict[str, Any]:
    """What `run_experiment` answers: the tool's JSON, and the external agent's program's."""
    success = record.eligible and record.metric is not None
    return {
        "step": record.step,
        "success": success,
        "metric": record.metric,
        "error": record.error,
        "steps_left": steps_left,
    }


def experiment_tool(ctx: RunContext) -> Tool:
    def run_experiment(args: RunExperimentArgs) -> str:
        record = ctx.run_step(args.hypothesis or "(no hypothesis given)")
        label = ctx.task.metric.label if ctx.task.metric else "metric"
        return json.dumps({**step_result(record, ctx.steps_left()), "summary": step_report(record, label)})

    return Tool(
        "run_experiment",
        "Run the task's experiment commands on the current code; counts one step; returns the metric or the error.",
        RunExperimentArgs,
        run_experiment,
    )


def baseline_toolbox(ctx: RunContext, role: str) -> Toolbox:
    scope = ctx.ws.scope(ROLE_SCOPE)
    box = Toolbox()
    available = [
        *file_tools(scope, box),
        shell_tool(ctx.ws, ROLE_SCOPE, box),
        experiment_tool(ctx),
        finish_tool("End this turn (the code is ready to run, or you are done)."),
        submit_tool("Declare the work finished; ends the run."),
    ]
    return pick(ctx.agent, role, available, box)


def system_prompt(role: str, text: str) -> dict[str, str]:
    """`ROLE: <role>` is for people; the offline policy reads the role from the facts line."""
    return {"role": "system", "content": f"ROLE: {role}\n{text.strip()}"}
