"""Experimentation: `run_experiment` (the flat ablation's too) runs the task's commands as
one counted step, compares it with baseline, target and best, logs it to `exp_log.md`, and
tags the best-so-far code `best` in `submission/`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import describe, stderr_excerpt
from aiscientist.agent.experiment_tool import experiment_tool as shared_experiment_tool
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.agent.tools import Tool, Toolbox, clip
from aiscientist.agent.turn import ERROR_PREFIX
from aiscientist.llm.offline.backend import BANNER, PolicyContext, PolicyReply
from aiscientist.llm.types import ToolCall
from aiscientist.records.paths import EXP_LOG, EXPERIMENTS, IMPL_LOG, STEP_RECORD
from aiscientist.records.step import StepRecord
from aiscientist.specialists.base import (
    SpecialistResult,
    append_once,
    call_brief,
    context_field,
    facts,
    read_or_empty,
    run_specialist,
    steps_used,
)
from aiscientist.specialists.implementation import LOG_ENTRY_FIELDS

ROLE = "experimentation"
WORD, MIN_WORDS = re.compile(r"[A-Za-z]{2,}"), 3  # a hypothesis of fewer words says nothing ("ok", "run it")
NEXT = "The experiment is run for you first: its result follows. Then reply with finish(summary=<your analysis>)."


class ExperimentationArgs(BaseModel):
    hypothesis: str = Field(description="what the current code change should do to the metric, and why")
    context: str = context_field()


SYSTEM = """ROLE: experimentation
You are AiScientist's experimentation specialist. The experiment on the current code is run
for you at the start of your call, with the hypothesis you were given (run_experiment: one
counted step of a limited budget). Compare its result with the baseline, the target and the
best so far. Your analysis is your answer: finish(summary=<what the result suggests trying next,
in one or two short sentences>) is appended to exp_log. The outcome and the metric reach the
orchestrator and exp_log without you: do not restate them."""


def experiment_tool(ctx: RunContext, scope: Any, box: Toolbox, limit: int | None = None) -> Tool:
    """The shared tool in its text rendering; each step is also appended to exp_log."""

    def log(record: StepRecord, outcome: str) -> None:
        append_once(ctx, scope, "exp_log", outcome.splitlines()[0], outcome)
        box.note(str(ctx.ws.paths.step_dir(record.step).relative_to(ctx.ws.paths.root)))

    return shared_experiment_tool(ctx, box, render="text", limit=limit, on_result=log)


def run(ctx: RunContext, key: str, args: ExperimentationArgs) -> SpecialistResult:
    args = args.model_copy(update={"hypothesis": stated(ctx, args.hypothesis)})
    scope = ctx.ws.scope(ROLE)
    limit = ctx.config.specialists.experiments_per_call
    box = build_toolbox(ctx, ROLE, extra=lambda box: [experiment_tool(ctx, scope, box, limit=limit)])
    user = call_brief(
        ctx,
        f"Hypothesis: {args.hypothesis}",
        args.context,
        steps_used(ctx),
        facts(ctx, ROLE, args=args.model_dump()),
        NEXT,
    )
    opening = ToolCall(id=f"call_{key}_run", name="run_experiment", arguments={"hypothesis": args.hypothesis})
    result = run_specialist(ctx, ROLE, SYSTEM, user, box, key, opening=opening)
    outcomes = [a for a in box.artifacts if a.startswith(EXPERIMENTS + "/")]
    if result.ok and outcomes:  # the analysis, after the step's facts (one answer: no append_log turn)
        marker = f"[analysis {key}]"
        append_once(ctx, scope, "exp_log", marker, f"{marker} {result.summary}")
    for step_dir in outcomes:
        record = StepRecord.model_validate_json((ctx.ws.paths.root / step_dir / STEP_RECORD).read_text())
        result.full_output += f"\n\n{describe(ctx, record)}\n{stderr_excerpt(ctx, record.step, 1500)}"
    result.ok = result.ok and bool(outcomes)
    return result


def stated(ctx: RunContext, hypothesis: str) -> str:
    """The hypothesis a step records: the one given, or, when it says next to nothing (the 1.5B orchestrator
    sent "ok" for each of a 1,200 s run's 31 steps), that with what the last implementation call was asked and
    did, from its impl_log entry."""
    if len(WORD.findall(hypothesis)) >= MIN_WORDS:
        return hypothesis
    entries = LOG_ENTRY_FIELDS.findall(read_or_empty(ctx, ROLE, IMPL_LOG))
    if not entries:
        return hypothesis
    task, files, summary = entries[-1]
    given = hypothesis.strip() or "(none given)"
    return clip(f"{given}; implementation's task: {task}; files changed: {files}; its summary: {summary}", 600)


# The offline model's answer as this role (registered with AiScientist's arms: orchestrator/arms.py)


def offline_policy(seen: PolicyContext) -> PolicyReply:
    """The run was made for the role (its opening call): finish; the tool itself logged the step's outcome."""
    runs = seen.calls_to("run_experiment")
    result = (runs[-1].result or "") if runs else "no run_experiment result in the conversation"
    if not runs or result.startswith(ERROR_PREFIX):
        return seen.finish(f"{BANNER} No experiment ran: {result[:300]}")
    return seen.finish(f"{BANNER} Ran the experiment; its outcome is the latest entry of {EXP_LOG}.")
