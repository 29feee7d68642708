"""Offline policies of AiScientist's orchestrator, Tier-1 specialists and Tier-2 readers.

They use the real tools, each ending with its closing tool in the turn that does the work.
The orchestrator calls comprehension, prioritization, then implementation and
experimentation in turn until the step budget is spent (with File-as-Bus on, several
calls per decision). Implementation reverts a change that set no new best and applies the
next one `search.next_change` picks; its tries come from logs/exp_log.md, or, with
File-as-Bus off, from the step outcomes the orchestrator passes in `context`. The
hypothesis experimentation gets is the change's marker, so the log pairs each change
with its metric.
"""

from __future__ import annotations

import json
import re
from typing import Any

import aiscientist.llm.offline.search as search
from aiscientist.llm.candidates import find_candidates
from aiscientist.llm.offline.backend import BANNER, PolicyContext, PolicyReply, register_role_policy
from aiscientist.llm.offline.solo import Call, editable, read_call, replay, tries
from aiscientist.records.paths import ANALYSIS_NOTES, ANALYSIS_SUMMARY, EXP_LOG, PLAN_FILE, SCRATCH, SUBMISSION

STEP_BLOCK = re.compile(r"^\[step (\d+)\] .*?(?=^\[step \d+\] |^details: |\Z)", re.M | re.S)
FOCUS = "targets, metric and baseline, method structure, evaluation protocol"
GUIDANCE = "every one-step change of a literal, each direction"
REVISE = "revert the last change unless it set a new best, then apply the next untried change"
KEPT = "the best validated step is kept."
PLAN, SUMMARY = PLAN_FILE, ANALYSIS_SUMMARY
CODE_LINES = r'^\s*(?:def|class) \w+|^\s*[A-Za-z_][\w.]*\s*(?::[^=]+)?=\s*(?:[-+]?[\d.]|True|False)|^(?:"""|# )'
LOG_LINES = r"^\[step \d+\] |^success: "
EVAL_LINES = r"(?i)mse|acc|loss|metric|final_info|split|^\s*(?:def|class) \w+|^(?:\"\"\"|# )"


def args(ctx: PolicyContext) -> dict[str, Any]:
    return ctx.facts.get("args") or {}


def _read_first(ctx: PolicyContext, paths: list[str], content: str) -> PolicyReply | None:
    """Read the `paths` not read yet (all in one turn), or None when all were tried."""
    tried = {e.path for e in ctx.history if e.name == "read_file"}
    todo = [p for p in paths if p not in tried]
    return PolicyReply(f"{BANNER} {content}", [read_call(ctx, p) for p in todo]) if todo else None


def reader(ctx: PolicyContext) -> PolicyReply:
    """Skim: one search per file for the lines that matter on the axis, then notes from the matches."""
    axis = str(ctx.facts.get("axis", "code"))
    searched = {e.path for e in ctx.calls_to("search_files")}
    todo = [f for f in ctx.facts.get("files") or [] if f not in searched]
    if todo:
        return PolicyReply(
            f"{BANNER} Skimming {len(todo)} file(s).",
            [("search_files", {"pattern": _pattern(axis, f), "path": f}) for f in todo],
        )
    notes = [f"{BANNER} notes on the {axis} axis (extracted mechanically, not interpreted):"]
    for e in ctx.calls_to("search_files"):
        if not e.failed:
            found = [line.split(":", 2) for line in (e.result or "").splitlines() if line.count(":") >= 2]
            notes.append(
                f"- {e.path}: " + _digest([(n, text) for _, n, text in found], _pattern(axis, e.path) == EVAL_LINES)
            )
    return ctx.finish("\n".join(notes))


def _pattern(axis: str, path: str) -> str:
    return EVAL_LINES if axis == "evaluation" or not path.startswith(SUBMISSION + "/") else CODE_LINES


def _digest(found: list[tuple[str, str]], evaluation: bool) -> str:
    found = [(n, t.strip()) for n, t in found]
    doc = next((t.strip('"# ') for _, t in found if t.startswith(('"""', "#"))), "")
    defs = [m for _, t in found for m in re.findall(r"^(?:def|class) (\w+)", t)]
    knobs = [] if evaluation else [f"{c.name}={c.value}" for _, t in found for c in find_candidates(t)]
    metric_lines = [
        f"line {n}: {t[:100]}" for n, t in found if evaluation and not t.startswith(("def ", "class ", '"""', "#"))
    ]
    parts = [
        doc[:160],
        "defines " + ", ".join(defs[:10]) if defs else "",
        "knobs: " + ", ".join(dict.fromkeys(knobs)) if knobs else "",
        "; ".join(metric_lines[:5]),
    ]
    return " | ".join(p for p in parts if p)


def comprehension(ctx: PolicyContext) -> PolicyReply:
    done = (
        f"{BANNER} Wrote {SUMMARY} from the task's facts; the readers' notes are in {ANALYSIS_NOTES.format('<axis>')}."
    )
    if any(e.name == "write_file" and not e.failed for e in ctx.history):
        return ctx.finish(done)
    f = ctx.facts
    baseline = "(not stated: the first experiment establishes it)" if f.get("baseline") is None else str(f["baseline"])
    sections = {
        "Targets and metrics": f"{f.get('metric')} ({f.get('direction')})",
        "Baseline": baseline,
        "Method structure": f"see {ANALYSIS_NOTES.format('method')}",
        "Evaluation protocol": f"see {ANALYSIS_NOTES.format('evaluation')}",
        "Ambiguities": "- No target value is given: any validated improvement over the baseline counts.",
        "Implementation details": "Editable files: "
        + ", ".join(f.get("editable") or ["(none)"])
        + f"; code notes: {ANALYSIS_NOTES.format('code')}",
    }
    text = f"# Paper / task analysis\n_{BANNER}_\n\n" + "\n\n".join(f"## {k}\n{v}" for k, v in sections.items()) + "\n"
    return ctx.finish(done, ("write_file", {"path": SUMMARY, "content": text}))


def prioritization(ctx: PolicyContext) -> PolicyReply:
    written = [e for e in ctx.history if e.name == "write_file" and not e.failed]
    if written:
        return ctx.finish(_plan_summary(str(written[-1].arguments.get("content", ""))))
    reading = None if not ctx.facts.get("bus", True) else _read_first(ctx, editable(ctx), "Reading the editable files.")
    if reading:
        return reading
    changes = search.options_of(replay(ctx))
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
    text = "\n".join(lines)
    return ctx.finish(_plan_summary(text), ("write_file", {"path": PLAN, "content": text}))


def _plan_summary(plan: str) -> str:
    entries = re.findall(r"^## (P\d\. .*)$", plan, re.M)
    return f"{BANNER} Wrote {PLAN} with {len(entries)} candidate changes. Top: {'; '.join(entries[:3]) or 'none'}"


def implementation(ctx: PolicyContext) -> PolicyReply:
    edits = ctx.calls_to("edit_file")
    if edits:
        failed = [e for e in edits if e.failed]
        return ctx.finish(
            f"{BANNER} The edit failed: {(failed[-1].result or '')[:300]}"
            if failed
            else f"{BANNER} Applied the change."
        )
    bus = ctx.facts.get("bus", True)
    reading = _read_first(ctx, editable(ctx), "Reading the code and the experiment log.")
    if reading:  # from the log only each step's change and outcome lines
        return PolicyReply(
            reading.content,
            reading.calls + ([("search_files", {"pattern": LOG_LINES, "path": EXP_LOG})] if bus else []),
        )
    found = [e.result or "" for e in ctx.calls_to("search_files") if not e.failed]
    logs = (
        "\n".join(line.split(": ", 1)[-1] for text in found for line in text.splitlines())
        if bus
        else str(args(ctx).get("context", ""))
    )
    done = tries(ctx, search.log_runs(logs))
    contents = replay(ctx)
    back = search.revert_last(contents, done)
    calls: list[Call] = [("edit_file", back.args())] if back else []
    note = f" after reverting {back.name} to {back.after} (no new best)" if back else ""
    edit = search.next_change(contents, done, ctx.rng("change", len(done)))
    if edit is None:
        return ctx.finish(f"{BANNER} No untried change is left{note}.", *calls)
    return ctx.finish(f"Applied {edit.what}{note}.\n{BANNER}\n{edit.marker()}", *calls, ("edit_file", edit.args()))


def experimentation(ctx: PolicyContext) -> PolicyReply:
    """Run and finish in one turn: the tool itself logs the step's outcome."""
    runs = ctx.calls_to("run_experiment")
    if runs:  # the finish of the first turn was refused: the run failed
        return ctx.finish(f"{BANNER} No experiment ran: {(runs[-1].result or '')[:300]}")
    hypothesis = str(args(ctx).get("hypothesis") or "measure the current code")
    return ctx.finish(
        f"{BANNER} Ran the experiment; its outcome is the latest entry of {EXP_LOG}.",
        ("run_experiment", {"hypothesis": hypothesis}),
    )


def helper(ctx: PolicyContext) -> PolicyReply:
    if ctx.calls_to("write_file"):
        return ctx.finish(f"{BANNER} Wrote the job's notes under {SCRATCH}/.")
    job = str(args(ctx).get("job") or "job")
    slug = re.sub(r"[^a-z0-9]+", "-", job.lower()).strip("-")[:40] or "job"
    return PolicyReply(
        f"{BANNER} Noting the job.",
        [("write_file", {"path": f"{SCRATCH}/{slug}.md", "content": f"{BANNER}\nJob: {job}\n"})],
    )


def orchestrator(ctx: PolicyContext) -> PolicyReply:
    """With File-as-Bus on: understand + plan + first change; then measure + next change."""
    f = ctx.facts
    count, bus = f.get("counters") or {}, f.get("bus", True)
    steps_done, budget = int(f.get("steps_done", 0)), int(f.get("steps_budget", 1))
    if "comprehension" not in ctx.tool_names or steps_done >= budget:
        reason = f"{BANNER} step budget spent ({steps_done} steps); {KEPT}"
        return PolicyReply(f"{BANNER} Submitting.", [("submit", {"reason": reason})])
    calls: list[Call] = []
    if not count.get("comprehension"):
        calls.append(("comprehension", {"focus": FOCUS}))
    if not count.get("prioritization") and (bus or not calls):
        analysis = "" if bus else next((e.result or "" for e in reversed(ctx.calls_to("comprehension"))), "")
        calls.append(("prioritization", {"guidance": GUIDANCE, "context": analysis}))
    specialist = [e for e in ctx.history if e.name in ("implementation", "experimentation")]
    if not calls and specialist and specialist[-1].name == "implementation":
        marker = search.parse_marker(specialist[-1].result or "")
        untried = "no untried change is left: the current code, measured again"
        hypothesis = f"{marker.marker()} {marker.what} (an untested offline guess)" if marker else untried
        calls.append(("experimentation", {"hypothesis": hypothesis}))
        if marker is None and steps_done + 1 < budget:
            return PolicyReply(f"{BANNER} Nothing new to try: measuring the current code.", calls)
        if bus and steps_done + 1 >= budget:  # nothing left to change after the last step
            submit = ("submit", {"reason": f"{BANNER} the last step of the budget ran; {KEPT}"})
            return PolicyReply(f"{BANNER} The last step, then submit.", [*calls, submit])
    if bus or not calls:
        calls.append(("implementation", {"mode": "explore", "task": REVISE, "context": "" if bus else _outcomes(ctx)}))
    return PolicyReply(f"{BANNER} {', '.join(name for name, _ in calls)}.", calls)


def _outcomes(ctx: PolicyContext) -> str:
    """Every `[step N]` outcome block seen (in implementation contexts and experimentation results), once each."""
    blocks: dict[int, str] = {}
    for e in ctx.history:
        sources = {"implementation": str(e.arguments.get("context", "")), "experimentation": e.result or ""}
        for match in STEP_BLOCK.finditer(sources.get(e.name, "")):
            blocks.setdefault(int(match.group(1)), match.group(0).strip())
    return "\n".join(blocks[k] for k in sorted(blocks))


for _role, _handler in {
    "orchestrator": orchestrator,
    "comprehension-reader": reader,
    "comprehension": comprehension,
    "prioritization": prioritization,
    "implementation": implementation,
    "experimentation": experimentation,
    "helper": helper,
}.items():
    register_role_policy(_role, _handler)
