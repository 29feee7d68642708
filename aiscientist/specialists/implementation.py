"""Implementation: change the editable code in `submission/`, log it in `impl_log.md`. In
mode `fix` the tail of `exp_log.md` is in the context, so the fix follows the evidence.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, Field

import aiscientist.llm.offline.search as search
from aiscientist.agent.context import RunContext
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.agent.tools import clip
from aiscientist.experiment import snapshots
from aiscientist.llm.offline.backend import BANNER, PolicyContext, PolicyReply
from aiscientist.llm.offline.solo import Call, editable, read_first, replay, tries
from aiscientist.records.paths import EXP_LOG, IMPL_LOG, PLAN_FILE, SUBMISSION, in_submission
from aiscientist.records.step import StepRecord
from aiscientist.specialists.base import (
    SpecialistResult,
    append_once,
    call_brief,
    context_field,
    exp_log_tail,
    facts,
    read_or_empty,
    run_specialist,
    shown_files,
)
from aiscientist.specialists.from_best import back_to_best
from aiscientist.util.substance import compile_error, runs_alike

ROLE = "implementation"
NEXT = "Reply with the edit_file (or write_file) call that makes the change in the code above."
CHANGED = "The code is changed. If the change is complete, call finish(summary) now; else make the next edit."
UNCHANGED = "no editable file changed what it runs: the code is as it was (comments, docstrings and layout aside)"
BROKEN = "the change left {path} not valid Python ({why}): it is undone, the code is as before this call"
MEASURED = "not run: this is the change step {step} measured ({outcome}); ask for a different change, the plan's next"
LOG_LINES = r"^\[step \d+\] |^success: "  # the offline policy reads only these lines of the log
LOG_ENTRY = "{marker}\ntask: {task}\nfiles changed: {files}\n{summary}"  # a call's impl_log entry
# an entry's task, files changed and first line of its summary (experimentation.stated reads them)
LOG_ENTRY_FIELDS = re.compile(r"^\[call [^\]\n]*\] mode: \S+\ntask: (.*)\nfiles changed: (.*)\n(.*)", re.M)
PLANNED = f"## Planned edits ({PLAN_FILE}), as edit_file arguments; if your task is one, make it so"
PLANNED_MAX = 5  # a plan's entries (the offline plan lists every literal up and down)
CHANGE_LINE = re.compile(r"^\s*-\s*change:\s*(\{.*\})\s*$", re.M)  # prioritization's entry template
ASKED = "## Your task's change, on the line that sets the old value, as edit_file arguments"
_NUMBER = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
FROM_TO = re.compile(rf"(?<![\w.])({_NUMBER})\s*(?:to|->|→|=>)\s*({_NUMBER})(?![\w.])", re.I)  # "50 to 60"
ASSIGNMENT = r"^([ \t]*([A-Za-z_][\w.]*)[ \t]*(?::[^=\n]*)?=[ \t]*){old}(?![\w.])(.*)$"  # NAME[: type] = old ...


class ImplementationArgs(BaseModel):
    mode: Literal["full", "fix", "explore"]
    task: str = Field(description="what to implement or fix")
    context: str = context_field()


SYSTEM = f"""ROLE: implementation
You are AiScientist's implementation specialist. Make the requested change to the
editable files under {SUBMISSION}/ with edit_file / write_file (protected files are
read-only); bash runs a command in {SUBMISSION}/ (sandboxed, no network). \
Mode full: implement the planned change completely. Mode fix: repair what
the last experiment showed broken, following the evidence. Mode explore: try the new idea
you were given, keeping the code runnable. Do not run experiments - experimentation does.
End with finish(summary): what you changed, in which files, and why."""


def run(ctx: RunContext, key: str, args: ImplementationArgs) -> SpecialistResult:
    measured = _measured(ctx, args.task)
    if measured is not None:  # the 1.5B orchestrator asked for step 1's change again; its implementer undid it
        outcome = f"{ctx.task.metric.label if ctx.task.metric else 'metric'} {measured.metric!r}"
        return SpecialistResult(role=ROLE, summary=MEASURED.format(step=measured.step, outcome=outcome), ok=False)
    scope = ctx.ws.scope(ROLE)
    box = build_toolbox(ctx, ROLE)
    restored = back_to_best(ctx, ROLE) if args.mode != "fix" and ctx.config.specialists.build_on_best else ""
    before = _code(ctx)
    user = call_brief(
        ctx,
        f"Mode: {args.mode}\n\nTask: {args.task}",
        f"{restored} Make your change on this code." if restored else "",
        args.context,
        exp_log_tail(ctx, ROLE) if args.mode == "fix" else "",
        facts(ctx, ROLE, args=args.model_dump()),
        shown_files(ctx, ROLE, [in_submission(f) for f in ctx.editable_files()]),  # the code as it is now
        asked_edits(args.task, before),
        planned_edits(ctx, before),
        NEXT,  # said last: small models follow what they read last
    )
    result = run_specialist(ctx, ROLE, SYSTEM, user, box, key, after_change=CHANGED)
    after = _code(ctx)
    if result.ok and runs_alike(before, after):  # said done, changed nothing it runs (ran train.py; a docstring)
        result.ok, result.summary = False, f"{UNCHANGED}; its summary: {result.summary}"
    elif broken := _not_python(before, after):  # the 1.5B model's edits failed four steps of a 1,200 s run so
        for rel, text in before.items():
            if after.get(rel) != text:
                ctx.write_code(rel, text)
        result.ok, result.summary = False, f"{broken}; its summary: {result.summary}"
    result.summary = f"{restored} {result.summary}" if restored else result.summary
    changed = ", ".join(a for a in box.artifacts if a.startswith(SUBMISSION + "/")) or "none"
    marker = f"[call {key}] mode: {args.mode}"
    summary = clip(result.summary, 2000)
    entry = LOG_ENTRY.format(marker=marker, task=clip(args.task, 500), files=changed, summary=summary)
    append_once(ctx, scope, "impl_log", marker, entry)
    if not ctx.ws.file_bus:  # the orchestrator sees the full output only without the bus
        diff = snapshots.diff_stat(ctx.ws.paths, snapshots.BASELINE_TAG, ctx.editable_files())
        result.full_output += "\n\nCode now differs from the baseline in:\n" + (diff or "(nothing)")
    result.artifacts = [*box.artifacts, IMPL_LOG]
    return result


def planned_edits(ctx: RunContext, code: dict[str, str] | None = None) -> str:
    """The plan's change lines that apply to the code as it is (`code`: path -> text, read when not given), as
    edit_file arguments naming the editable file that holds the old text (the 1.5B implementer, asked to change
    EPOCHS "in train.py", rewrote train.py whole; the plan's line held the exact old and new text): the first
    PLANNED_MAX, so a long plan is read only as far as they go. Empty without a plan the role may read or such a
    line."""
    code = _code(ctx) if code is None else code
    edits: dict[str, None] = {}  # in the plan's order, each once
    for match in CHANGE_LINE.finditer(read_or_empty(ctx, ROLE, PLAN_FILE)):
        if len(edits) == PLANNED_MAX:
            break
        try:
            edit = json.loads(match.group(1))
        except ValueError:
            continue
        old, new = (edit.get("old"), edit.get("new")) if isinstance(edit, dict) else (None, None)
        if not isinstance(old, str) or not isinstance(new, str) or not old.strip() or old == new:
            continue
        holders = [rel for rel, text in code.items() if text.count(old) == 1]
        if len(holders) == 1:  # made already, or ambiguous: left out
            edits[json.dumps({"path": in_submission(holders[0]), "old": old, "new": new})] = None
    return "\n".join([PLANNED, *edits]) if edits else ""


def asked_edits(task: str, code: dict[str, str]) -> str:
    """Each change of a number the task names ("the number of epochs from 50 to 60", "learning rate 0.05 -> 0.1") as
    edit_file arguments on the one line of the editable code (`code`: path -> text) that assigns the old number to
    a name sharing a word with the task. The 1.5B orchestrator asked for the epochs "in train.py from 50 to 60";
    EPOCHS was set in config.py, and its implementer rewrote train.py whole, changing nothing. Empty when the task
    names no such change or no line, or several, fit."""
    words = set(re.findall(r"[a-z]+", task.lower()))
    edits: dict[str, None] = {}
    for old, new in FROM_TO.findall(task):
        if float(old) == float(new):
            continue
        assigns = re.compile(ASSIGNMENT.format(old=re.escape(old)), re.M)
        hits = [
            (rel, match)
            for rel, text in code.items()
            for match in assigns.finditer(text)
            if set(re.findall(r"[a-z]+", match.group(2).lower())) & words
        ]
        if len(hits) != 1:
            continue
        rel, match = hits[0]
        before, after = match.group(0).strip(), f"{match.group(1)}{new}{match.group(3)}".strip()
        if code[rel].count(before) == 1:
            edits[json.dumps({"path": in_submission(rel), "old": before, "new": after})] = None
    return "\n".join([ASKED, *edits]) if edits else ""


def _measured(ctx: RunContext, task: str) -> StepRecord | None:
    """The successful step whose hypothesis is `task` (words compared, case and punctuation aside)."""
    words = _words(task)
    return next((r for r in ctx.step_records() if r.success and _words(r.hypothesis) == words), None)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*", text.lower())


def _not_python(before: dict[str, str], after: dict[str, str]) -> str:
    """Why the change is undone: a Python file it changed no longer compiles ("" when none)."""
    for rel, text in after.items():
        why = compile_error(rel, text) if before.get(rel) != text else None
        if why is not None:
            return BROKEN.format(path=in_submission(rel), why=why)
    return ""


def _code(ctx: RunContext) -> dict[str, str]:
    return {rel: ctx.read_code(rel) for rel in ctx.editable_files()}


# The offline model's answer as this role (registered with AiScientist's arms: orchestrator/arms.py)


def offline_policy(seen: PolicyContext) -> PolicyReply:
    edits = seen.calls_to("edit_file")
    if edits:
        failed = [e for e in edits if e.failed]
        return seen.finish(
            f"{BANNER} The edit failed: {(failed[-1].result or '')[:300]}"
            if failed
            else f"{BANNER} Applied the change."
        )
    bus = seen.facts.get("bus", True)
    reading = read_first(seen, editable(seen), "Reading the code and the experiment log.")
    if reading:  # from the log only each step's change and outcome lines, once
        searched = bool(seen.calls_to("search_files"))
        log = [("search_files", {"pattern": LOG_LINES, "path": EXP_LOG})] if bus and not searched else []
        return PolicyReply(reading.content, reading.calls + log)
    found = [e.result or "" for e in seen.calls_to("search_files") if not e.failed]
    logs = (
        "\n".join(line.split(": ", 1)[-1] for text in found for line in text.splitlines())
        if bus
        else str(seen.args.get("context", ""))
    )
    done = tries(seen, search.log_runs(logs))
    contents = replay(seen)
    back = search.revert_last(contents, done)
    calls: list[Call] = [("edit_file", back.args())] if back else []
    note = f" after reverting {back.name} to {back.after} (no new best)" if back else ""
    guided = search.guided_change(contents, str(seen.args.get("task", "")))
    edit = guided or search.next_change(contents, done, seen.rng("change", len(done)), search.fixed_names(seen.facts))
    if edit is None:
        return seen.finish(f"{BANNER} No untried change is left{note}.", *calls)
    return seen.finish(f"Applied {edit.what}{note}.\n{BANNER}\n{edit.marker()}", *calls, ("edit_file", edit.args()))
