"""Implementation: change the editable code in `submission/`, log it in `impl_log.md`. In
mode `fix` the tail of `exp_log.md` is in the context, so the fix follows the evidence.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.agent.tools import clip
from aiscientist.experiment import snapshots
from aiscientist.records.paths import EXP_LOG, IMPL_LOG, SUBMISSION, in_submission
from aiscientist.specialists.base import (
    SpecialistResult,
    append_once,
    call_brief,
    facts,
    read_or_empty,
    run_specialist,
    shown_files,
    tail,
)

ROLE = "implementation"


class ImplementationArgs(BaseModel):
    mode: Literal["full", "fix", "explore"]
    task: str = Field(description="what to implement or fix")
    context: str = Field("", description="evidence and material the implementer needs (failure traces, plan items)")


SYSTEM = f"""ROLE: implementation
You are AiScientist's implementation specialist. Make the requested change to the
editable files under {SUBMISSION}/ with edit_file / write_file (protected files are
read-only); bash runs a command in {SUBMISSION}/ (sandboxed, no network). \
Mode full: implement the planned change completely. Mode fix: repair what
the last experiment showed broken, following the evidence. Mode explore: try the new idea
you were given, keeping the code runnable. Do not run experiments - experimentation does.
End with finish(summary): what you changed, in which files, and why."""


def run(ctx: RunContext, key: str, args: ImplementationArgs) -> SpecialistResult:
    scope = ctx.ws.scope(ROLE)
    box = build_toolbox(ctx, ROLE)
    exp_tail = (
        tail(read_or_empty(ctx, ROLE, EXP_LOG), ctx.config.specialists.exp_log_tail_chars) if args.mode == "fix" else ""
    )
    user = call_brief(
        ctx,
        f"Mode: {args.mode}\n\nTask: {args.task}",
        args.context,
        f"## Tail of {EXP_LOG}\n{exp_tail}" if exp_tail else "",
        facts(ctx, ROLE, args=args.model_dump()),
        shown_files(ctx, ROLE, [in_submission(f) for f in ctx.editable_files()]),  # the code as it is now: last
    )
    result = run_specialist(ctx, ROLE, SYSTEM, user, box, key)
    changed = ", ".join(a for a in box.artifacts if a.startswith(SUBMISSION + "/")) or "none"
    marker = f"[call {key}] mode: {args.mode}"
    entry = f"{marker}\ntask: {clip(args.task, 500)}\nfiles changed: {changed}\n{clip(result.summary, 2000)}"
    append_once(ctx, scope, "impl_log", marker, entry)
    if not ctx.ws.file_bus:  # the orchestrator sees the full output only without the bus
        diff = snapshots.diff_stat(ctx.ws.paths, snapshots.BASELINE_TAG, ctx.editable_files())
        result.full_output += "\n\nCode now differs from the baseline in:\n" + (diff or "(nothing)")
    result.artifacts = [*box.artifacts, IMPL_LOG]
    return result
