"""Experimentation: `run_experiment` (the flat ablation's too) runs the task's commands as
one counted step, compares it with baseline, target and best, logs it to `exp_log.md`, and
tags the best-so-far code `best` in `submission/`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.tools import Tool, Toolbox
from aiscientist.experiment.engine import StepRecord
from aiscientist.experiment.gitrepo import git
from aiscientist.specialists.base import (
    SpecialistResult,
    append_once,
    call_brief,
    facts,
    role_toolbox,
    run_loop,
    steps_used,
)
from aiscientist.workspace.errors import ToolError

ROLE = "experimentation"
BEST_TAG = "best"


class ExperimentationArgs(BaseModel):
    hypothesis: str = Field(description="what the current code change should do to the metric, and why")
    context: str = Field("", description="material from earlier calls this specialist needs")


class RunExperimentArgs(BaseModel):
    hypothesis: str


SYSTEM = """ROLE: experimentation
You are AiScientist's experimentation specialist. Run the experiment on the current code
with run_experiment(hypothesis) - each call is one counted step of a limited budget -
then compare the result with the baseline, the target and the best so far. Append your
analysis to exp_log with append_log (the run's facts are logged automatically).
End with finish(summary): outcome, metric, and what it suggests next."""


def experiment_tool(rt: RunContext, scope: Any, box: Toolbox, limit: int | None = None) -> Tool:
    """At most `limit` runs through this toolbox."""
    runs: list[int] = []

    def run_experiment(args: RunExperimentArgs) -> str:
        if limit is not None and len(runs) >= limit:
            raise ToolError(f"this call may run {limit} experiment(s); finish and report")
        record = run_step_once(rt, box.current_key, args.hypothesis)
        runs.append(record.step)
        outcome = describe(rt, record)
        append_once(rt, scope, "exp_log", outcome.splitlines()[0], outcome)
        box.note(str(rt.ws.paths.step_dir(record.step).relative_to(rt.ws.paths.root)))
        return outcome

    return Tool(
        "run_experiment",
        "Run the task's experiment commands on the current code (one counted step).",
        RunExperimentArgs,
        run_experiment,
    )


def run_step_once(rt: RunContext, key: str, hypothesis: str) -> StepRecord:
    """The step number is noted first: after a kill, a finished step is reused, an unfinished one redone."""
    engine = rt.ws.engine
    planned = rt.journal.intent(key)
    if planned is not None:
        done = rt.ws.paths.step_dir(int(planned)) / "step.json"
        if done.is_file():
            return StepRecord.model_validate_json(done.read_text())
    if rt.steps_left() <= 0:
        raise ToolError(f"step budget reached ({rt.steps_done()}/{rt.steps} steps used): no more experiments")
    rt.journal.note_intent(key, engine.next_step())
    record = rt.run_step(hypothesis)
    _tag_if_best(rt, record)
    return record


def improved(rt: RunContext, record: StepRecord) -> bool:
    """`record` beats both the stated baseline and every earlier step."""
    task = rt.task
    if not record.eligible or record.metric is None or task.metric is None:
        return False
    earlier = rt.best_step(before=record.step)
    for reference in (task.baseline, earlier.metric if earlier else None):
        if reference is not None and not task.metric.better(record.metric, reference):
            return False
    return True


def _tag_if_best(rt: RunContext, record: StepRecord) -> None:
    if improved(rt, record):
        paths = rt.ws.paths
        git(paths, "add", "-A")
        git(paths, "commit", "-q", "--allow-empty", "-m", f"step {record.step}: new best {record.metric}")
        git(paths, "tag", "-f", BEST_TAG)


def describe(rt: RunContext, record: StepRecord) -> str:
    """What exp_log.md and the agent get."""
    task = rt.task
    metric = task.metric
    best = rt.best_step()
    lines = [f"[step {record.step:04d}] hypothesis: {record.hypothesis[:300]}"]
    if record.success:
        lines.append(
            f"success: true; metric: {record.metric!r} ({metric.label if metric else 'metric'}, {metric.direction if metric else ''})"
        )
        if task.baseline is not None and record.metric is not None and metric is not None:
            gain = record.metric - task.baseline
            lines.append(
                f"vs baseline {task.baseline}: {gain:+.6g} ({'better' if metric.better(record.metric, task.baseline) else 'not better'})"
            )
        if task.target is not None:
            lines.append(
                f"target {task.target}: {'reached' if record.metric is not None and metric and not metric.better(task.target, record.metric) else 'not reached'}"
            )
    else:
        lines.append(f"success: false; error: {record.error}")
    if record.constraint_violated:
        lines.append("constraint violated: this step cannot count as best")
    if not record.valid:
        lines.append("INVALID: protected files were changed during the run")
    verdict = "new best" if improved(rt, record) else ("failed" if not record.success else "no improvement")
    lines.append(f"verdict: {verdict}" + (f" (best so far: step {best.step}, metric {best.metric!r})" if best else ""))
    lines.append(f"details: experiments/step_{record.step:04d}/ (stdout.txt, stderr.txt, diff.patch)")
    return "\n".join(lines)


def run(rt: RunContext, key: str, args: ExperimentationArgs) -> SpecialistResult:
    scope = rt.ws.scope(ROLE)
    box = role_toolbox(
        rt, ROLE, extra=lambda box: [experiment_tool(rt, scope, box, limit=rt.config.specialists.experiments_per_call)]
    )
    user = call_brief(
        rt,
        f"Hypothesis: {args.hypothesis}",
        args.context,
        steps_used(rt),
        facts(rt, ROLE, args=args.model_dump()),
        description=False,
    )
    result = run_loop(rt, ROLE, SYSTEM, user, box, key)
    outcomes = [a for a in box.artifacts if a.startswith("experiments/")]
    for step_dir in outcomes:
        record = StepRecord.model_validate_json((rt.ws.paths.root / step_dir / "step.json").read_text())
        stderr = (rt.ws.paths.root / step_dir / "stderr.txt").read_text()[-1500:]
        result.full_output += f"\n\n{describe(rt, record)}\nstderr tail:\n{stderr}"
    result.ok = result.ok and bool(outcomes)
    return result
