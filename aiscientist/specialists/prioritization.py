"""Prioritization: a ranked, dependency-aware, deliberately diverse plan in `plan/prioritized_tasks.md`."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

import aiscientist.llm.offline.search as search
from aiscientist.agent.context import RunContext
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.llm.offline.backend import BANNER, PolicyContext, PolicyReply
from aiscientist.llm.offline.solo import editable, read_first, replay
from aiscientist.records.paths import ANALYSIS_SUMMARY, PLAN_FILE, SUBMISSION, in_submission
from aiscientist.specialists.base import (
    SpecialistResult,
    call_brief,
    context_field,
    exp_log_tail,
    facts,
    run_specialist,
    shown_files,
    steps_used,
    with_file,
)

ROLE = "prioritization"
MAX_ENTRIES = 5  # the 1.5B model's plan restated the task and its pipeline before three entries: 505 tokens, 50 s
PLAN = PLAN_FILE


class PrioritizationArgs(BaseModel):
    guidance: str = Field(description="what the plan should emphasise now")
    context: str = context_field()


SYSTEM = f"""ROLE: prioritization
You are AiScientist's prioritization specialist. Make the plan: at most {MAX_ENTRIES} candidate
hypotheses / code changes ranked P0 (first) to P3, deliberately diverse - different files,
mechanisms and hyper-parameters - because broad exploration finds more gains than refining
one idea. Use what the analysis and the experiment log say. Each entry is two lines:
## P0. <the change in a few words>: <why it should help, in one short sentence>
- change: {{"path": "{SUBMISSION}/<file>", "old": "<one line as it is in the file>", "new": "<that line changed>"}}
Nothing else: no sub-items, no restated task, no summary. You change no code (implementation does). The
plan is your answer: call finish(summary=<the plan>) and it is saved as {PLAN}."""


def run(ctx: RunContext, key: str, args: PrioritizationArgs) -> SpecialistResult:
    """The analysis and the code are in the prompt (a small model need not read them); the read tools stay
    for what is not shown (the offline policy reads the code through them: it reads facts and results, not prose)."""
    box = build_toolbox(ctx, ROLE)
    files = shown_files(ctx, ROLE, [ANALYSIS_SUMMARY, *(in_submission(f) for f in ctx.editable_files())])
    entries = min(MAX_ENTRIES, max(2, ctx.steps - ctx.steps_done()))  # as many as the steps left can try (2 at least)
    user = call_brief(
        ctx,
        f"Guidance: {args.guidance}\nThis plan: at most {entries} entries.",
        args.context,
        steps_used(ctx),
        exp_log_tail(ctx, ROLE),
        facts(ctx, ROLE, args=args.model_dump()),
        files,
    )
    return with_file(ctx, run_specialist(ctx, ROLE, SYSTEM, user, box, key, deliverable=PLAN), PLAN)


# The offline model's answer as this role (registered with AiScientist's arms: orchestrator/arms.py)


def offline_policy(seen: PolicyContext) -> PolicyReply:
    reading = (
        None if not seen.facts.get("bus", True) else read_first(seen, editable(seen), "Reading the editable files.")
    )
    if reading:
        return reading
    changes = search.options_of(replay(seen), search.fixed_names(seen.facts))
    lines = [
        f"# Prioritized tasks\n_{BANNER}: one-step changes of literals found mechanically, each up and down; gains "
        "unknown._\n"
    ]
    for rank, edit in enumerate(changes):
        lines += [
            f"## P{min(3, rank * 4 // len(changes))}. #{rank + 1}: {edit.what}",
            f"- change: {json.dumps(edit.args())}",
            "",
        ]
    if not changes:
        lines.append(
            "No candidate change found (with File-as-Bus off this role cannot read the code; implementation chooses)."
        )
    return seen.finish("\n".join(lines))  # the plan is the answer (`deliverable`)
