"""Prioritization: a ranked, dependency-aware, deliberately diverse plan in `plan/prioritized_tasks.md`."""

from __future__ import annotations

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.records.paths import PLAN_FILE
from aiscientist.specialists.base import (
    SpecialistResult,
    call_brief,
    facts,
    run_specialist,
    steps_used,
    with_file,
)

ROLE = "prioritization"
PLAN = PLAN_FILE


class PrioritizationArgs(BaseModel):
    guidance: str = Field(description="what the plan should emphasise now")
    context: str = Field("", description="material from earlier calls this specialist needs")


SYSTEM = f"""ROLE: prioritization
You are AiScientist's prioritization specialist. Write {PLAN}: candidate hypotheses /
code changes ranked P0 (first) to P3, each with expected gain, feasibility, dependencies
and the exact change to try. Keep the list deliberately diverse - different files,
mechanisms and hyper-parameters - because broad exploration finds more gains than
refining one idea. Use what the analysis and the experiment log say. Each entry may end
with a line `- change: {{"path": ..., "old": ..., "new": ...}}` giving an exact edit.
End with finish(summary) - the top entries in a few lines."""


def run(ctx: RunContext, key: str, args: PrioritizationArgs) -> SpecialistResult:
    box = build_toolbox(ctx, ROLE)
    user = call_brief(
        ctx, f"Guidance: {args.guidance}", args.context, steps_used(ctx), facts(ctx, ROLE, args=args.model_dump())
    )
    return with_file(ctx, run_specialist(ctx, ROLE, SYSTEM, user, box, key), PLAN)
