"""A specialist call on the kernel's loop: a fresh private context (system prompt and the
call's instructions), its own tools, a turn limit, `finish(summary)`; the prompt blocks
the calls share. Effects are journaled by position: a resumed run replays them.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.journal import journaled_call
from aiscientist.agent.loop import LoopSpec, run_loop
from aiscientist.agent.memory import settled
from aiscientist.agent.outcome import StopReason
from aiscientist.agent.tools import Toolbox
from aiscientist.llm.facts import facts_line, task_facts
from aiscientist.llm.toolcalls import TOOLS_SLOT
from aiscientist.llm.types import ToolCall
from aiscientist.records.paths import ANALYSIS, EXP_LOG, EXPERIMENTS, IMPL_LOG, PLAN_FILE, in_submission
from aiscientist.util.paging import Page, clip_lines
from aiscientist.workspace.errors import ToolError

DELIVERABLE_PROSE = 200  # an answer without a call this long is the deliverable (the 1.5B model wrote its analysis so)
DELIVERED_SUMMARY = 600  # characters of a written deliverable the summary repeats
NUDGE = "Use your tools to make progress; call finish(summary) when you are done."
TURN_RULES = "Every reply of yours calls tools (prose alone does nothing); their results come back in the next message."
END_RULE = "When the work is done, call finish(summary): that call ends your work."


# the 1.5B orchestrator restated the task (~55 tokens, ~6 s) in every call's context: it is in every role's prompt
CONTEXT_HELP = (
    "only what the task and the workspace files do not hold (e.g. a failure trace); usually empty: every specialist "
    "reads the task, and with File-as-Bus on the files"
)


def context_field() -> Any:
    """The `context` argument every specialist takes from the orchestrator."""
    return Field("", description=CONTEXT_HELP)


class SpecialistResult(BaseModel):
    """`full_output` is shown to the orchestrator only with File-as-Bus off (then results travel only so)."""

    role: str
    summary: str
    artifacts: list[str] = []
    full_output: str = ""
    ok: bool = True
    turns: int = 0

    def for_orchestrator(self, file_bus: bool, limit: int) -> str:
        head = f"[{self.role}: {'done' if self.ok else 'stopped'} in {self.turns} turn(s)]"
        files = f"\nArtifacts: {', '.join(self.artifacts)}" if self.artifacts else ""
        if file_bus:
            rest = "its files hold the rest (Artifacts)" if self.artifacts else "ask the specialist for less"
            return f"{head}\n{clip_lines(self.summary, limit, rest)}{files}"
        return f"{head}\n{self.full_output or self.summary}{files}"


def run_specialist(
    ctx: RunContext,
    role: str,
    system: str,
    user: str,
    box: Toolbox,
    key: str,
    max_turns: int | None = None,
    prose_finish_chars: int | None = None,
    deliverable: str | None = None,
    after_change: str | None = None,
    opening: ToolCall | None = None,
) -> SpecialistResult:
    """One specialist call (`ok`: it finished; `full_output`: the summary). BudgetExhausted and
    ModelUnavailable propagate; another ModelError ends this call as failed.
    `deliverable`: the file the call is for; when the model finished (or answered in prose of at
    least DELIVERABLE_PROSE characters) without writing it, its answer is the file's text (a
    small model's analysis is then generated once, not once in a file and again in finish).
    `after_change`: said after a turn whose write or edit succeeded (LoopSpec.after_change); `opening`: a call made
    for the model before its first turn (LoopSpec.opening)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": role_system(ctx, system)},
        {"role": "user", "content": user},
    ]
    spec = LoopSpec(
        max_turns=max_turns or ctx.config.specialists.max_turns,
        nudge=lambda: NUDGE,
        key=f"{key}.t",
        finish_after_failure=False,
        prose_finish_chars=prose_finish_chars or (DELIVERABLE_PROSE if deliverable else None),
        after_change=after_change,
        opening=opening,
    )
    outcome = run_loop(
        lambda msgs, tools: ctx.complete(role, settled(msgs, box.is_effect), tools, guided=False),
        box,
        messages,
        spec,
        lambda call, pos: journaled_call(ctx.journal, ctx.ws.paths.logs, box, call, pos),
    )
    if outcome.stop is StopReason.FINISHED:
        summary = outcome.summary or "(no summary)"
    elif outcome.stop is StopReason.MODEL_ERROR:
        summary = f"model error, {role} stopped: {outcome.detail}"
    else:
        why = f" ({outcome.detail})" if outcome.detail else ""  # the loop's own words; no text is matched
        summary = f"{role} stopped after {outcome.turns} turns without calling finish{why}"
    ok = outcome.stop is StopReason.FINISHED
    if ok and deliverable and deliverable not in box.artifacts and outcome.summary:
        ctx.ws.scope(role).write(deliverable, outcome.summary.strip() + "\n")
        box.note(deliverable)
        summary = clip_lines(outcome.summary, DELIVERED_SUMMARY, f"the rest is in {deliverable}")
    return SpecialistResult(
        role=role, summary=summary, artifacts=box.artifacts, full_output=summary, ok=ok, turns=outcome.turns
    )


def read_or_empty(ctx: RunContext, role: str, path: str) -> str:
    """Empty when absent or not `role`'s to read."""
    scope = ctx.ws.scope(role)
    if scope.policy.refusal("read", path) is not None:
        return ""  # not this role's to see (File-as-Bus off): no attempt, no denial on record
    try:
        return scope.read(path)
    except (ToolError, OSError):
        return ""


RECENT_LOG_BYTES = 64 * 1024


def append_once(ctx: RunContext, scope: Any, log: str, marker: str, text: str) -> None:
    """Unless the log's recent part has `marker` already: after an interruption the
    entry written just before it may be offered again. Only the last RECENT_LOG_BYTES
    are read, so the check costs the same at step 1,000 as at step 1."""
    try:
        with open(ctx.ws.paths.logs / f"{log}.md", "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - RECENT_LOG_BYTES))
            if marker.encode() in handle.read():
                return
    except FileNotFoundError:
        pass
    scope.append(log, text)


def with_file(ctx: RunContext, result: SpecialistResult, path: str) -> SpecialistResult:
    """`result` with `path` (the file the call must write) in its full output; not ok when missing."""
    text = read_or_empty(ctx, result.role, path)
    if not text:
        result.ok, result.summary = False, result.summary + f" ({path} was not written)"
    result.full_output = f"{result.summary}\n\n## {path}\n{text}" if text else result.summary
    return result


SHOWN_CHARS = 8000
CUT = "not shown"  # how shown_files marks a file it did not show whole


def shown_files(ctx: RunContext, role: str, paths: list[str], limit: int = SHOWN_CHARS) -> str:
    """The files `role` may read, for a prompt: each once, whole lines within `limit` characters
    in all; a file shown in part ends with the read_file call that reads on and how many lines
    remain, one left out says so. Saves the model a turn of read_file calls."""
    parts, left = ["## Files"], limit
    for path in dict.fromkeys(paths):
        if left <= 0:
            parts.append(f"### {path}\n({CUT}: read it with read_file(path={json.dumps(path)}, start_line=1))")
            continue
        page = _page_or_none(ctx, role, path, max(left, 200))
        if page is not None and page.text:
            shown = f"### {path}\n```\n{page.text.rstrip()}\n```{page.note('read_file', path)}"
            left -= len(shown)
            parts.append(shown)
    return "\n".join(parts)


def _page_or_none(ctx: RunContext, role: str, path: str, chars: int) -> Page | None:
    """The first page of `path` (None when absent or not `role`'s to read)."""
    scope = ctx.ws.scope(role)
    if scope.policy.refusal("read", path) is not None:
        return None
    try:
        return scope.read_page(path, max_chars=chars)
    except (ToolError, OSError):
        return None


def task_brief(ctx: RunContext) -> str:
    task = ctx.task
    files = ", ".join(in_submission(p) for p in task.editable_globs) or "(none)"
    text = re.sub(r"^Editable files:.*$", f"Editable files: {files}", task.summary(), count=1, flags=re.M)
    return text + f"\nStep budget: {ctx.steps} experiment steps in total."


def role_system(ctx: RunContext, system: str, end_rule: str = END_RULE) -> str:
    """A role's system prompt. What every role shares comes first: the task and the turn rules, then (for a model
    reading its tools from the prompt) the tool block, whose read tools lead every role's list; then the role's
    own instructions and how its work ends. A server's prompt cache so reuses one role's prefix for the next
    role's first call (the 1.5B model reads ~40 uncached tokens a second on 2 cores)."""
    return f"{task_brief(ctx)}\n\n{TURN_RULES}{TOOLS_SLOT}{system}\n\n{end_rule}"


def facts(ctx: RunContext, role: str, **extra: Any) -> str:
    return facts_line(**run_facts(ctx, role), steps_done=ctx.steps_done(), **extra)


def run_facts(ctx: RunContext, role: str) -> dict[str, Any]:
    """The facts that stay the same for the whole run (a prompt's stable part may hold them)."""
    editable = [in_submission(p) for p in ctx.task.editable_globs]
    return {"role": role, "bus": ctx.ws.file_bus, "steps_budget": ctx.steps, **task_facts(ctx.task, editable)}


def bus_rules(ctx: RunContext) -> str:
    if ctx.ws.file_bus:
        return (
            "File-as-Bus: the workspace files are the shared memory. Read what other specialists wrote "
            f"({ANALYSIS}/, {PLAN_FILE}, {EXP_LOG}, {IMPL_LOG}, {EXPERIMENTS}/) "
            "instead of expecting it in your instructions."
        )
    return (
        "File-as-Bus is OFF: you cannot read other specialists' areas or the logs. Everything you need "
        "from earlier work is in the context of your instructions."
    )


def call_brief(ctx: RunContext, request: str, context: str, *after: str) -> str:
    """The bus rules, the request, the orchestrator's context, then `after` (empty parts dropped); the
    task is in the system prompt (`role_system`)."""
    context = f"Context from the orchestrator:\n{context}" if context else ""
    parts = [bus_rules(ctx), request, context, *after]
    return "\n\n".join(p for p in parts if p)


def steps_used(ctx: RunContext) -> str:
    return f"Steps used so far: {ctx.steps_done()} of {ctx.steps}."


def exp_log_tail(ctx: RunContext, role: str) -> str:
    """The end of exp_log.md (about its last entry) as a prompt block, or nothing when empty or not `role`'s to read."""
    text = tail(read_or_empty(ctx, role, EXP_LOG), ctx.config.specialists.exp_log_tail_chars)
    return f"## Tail of {EXP_LOG}\n{text}" if text else ""


def tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]
