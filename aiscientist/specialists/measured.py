"""Code already measured: experimentation does not run editable files an earlier step measured, and an
implementation that recreates them is undone.

The engine records a step whose editable files an earlier measured step (or the baseline) ran as a repeat that
never counts as progress (`experiment/repeats.py`). In a 1,200 s run of the 1.5B model, 18 of 31 steps were
such repeats: after each restore to the best code, implementation either made step 13's worse change again
(eleven times) or changed nothing (seven times), and experimentation ran the result anyway, each time for a
step's wall time and nothing learnt.
"""

from __future__ import annotations

from aiscientist.agent.context import RunContext
from aiscientist.experiment import integrity
from aiscientist.experiment.repeats import code_digest

NOT_RUN = "not run: the editable files are {which}, measured already; change the code first (implementation)"
RECREATED = "the change makes the code {which}, measured already: it is undone, the code is as before this call"


def measured_as(ctx: RunContext) -> str | None:
    """Which step of this run measured the submission's editable files as they are now ("step 13's (mse 0.852)"),
    or None. A step that gave a metric measured its code, whether or not the metric kept the task's constraints;
    a failed step did not (running its code again is a retry). The baseline's code counts only once a step here
    ran it: a run is not measured before its first step."""
    digest = code_digest(ctx.task, integrity.scan(ctx.submission))
    for record in ctx.step_records():
        if record.code_sha256 == digest and record.success and record.metric is not None:
            label = ctx.task.metric.label if ctx.task.metric else "metric"
            return f"step {record.step}'s ({label} {record.metric:.6g})"
    return None


def refuse_measured(ctx: RunContext) -> str | None:
    """Why experimentation does not run the code as it is (None: it is new)."""
    which = measured_as(ctx)
    return None if which is None else NOT_RUN.format(which=which)
