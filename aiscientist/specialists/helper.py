"""Helper: short auxiliary jobs with its own scratch area (`scratch/`), read-only elsewhere."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.llm.offline.backend import BANNER, PolicyContext, PolicyReply
from aiscientist.records.paths import EXPERIMENTS, SCRATCH
from aiscientist.specialists.base import SpecialistResult, bus_rules, context_field, facts, run_specialist

ROLE = "helper"


class HelperArgs(BaseModel):
    job: str = Field(description=f"the auxiliary job, e.g. summarise the failures in {EXPERIMENTS}/")
    context: str = context_field()


SYSTEM = f"""ROLE: helper
You are AiScientist's helper for short auxiliary jobs. You may write only under {SCRATCH}/;
everything else is read-only. Keep it short. End with finish(summary)."""


def run(ctx: RunContext, key: str, args: HelperArgs) -> SpecialistResult:
    box = build_toolbox(ctx, ROLE)
    user = "\n\n".join(
        [
            bus_rules(ctx),
            f"Job: {args.job}",
            *([f"Context:\n{args.context}"] if args.context else []),
            facts(ctx, ROLE, args=args.model_dump()),
        ]
    )
    return run_specialist(ctx, ROLE, SYSTEM, user, box, key, max_turns=min(6, ctx.config.specialists.max_turns))


# The offline model's answer as this role (registered with AiScientist's arms: orchestrator/arms.py)


def offline_policy(seen: PolicyContext) -> PolicyReply:
    if seen.calls_to("write_file"):
        return seen.finish(f"{BANNER} Wrote the job's notes under {SCRATCH}/.")
    job = str(seen.args.get("job") or "job")
    slug = re.sub(r"[^a-z0-9]+", "-", job.lower()).strip("-")[:40] or "job"
    return PolicyReply(
        f"{BANNER} Noting the job.",
        [("write_file", {"path": f"{SCRATCH}/{slug}.md", "content": f"{BANNER}\nJob: {job}\n"})],
    )
