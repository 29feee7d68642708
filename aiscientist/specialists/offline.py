"""Offline policies for the Tier-1 specialists and the Tier-2 readers (the `offline` model).

Deterministic and stateless: each answer is derived from the instructions and the tool
results so far. They use the real tools - readers read files, comprehension writes
`paper_analysis/summary.md`, prioritization writes the plan from the candidate changes
`aiscientist.candidates` finds, implementation applies one with `edit_file`,
experimentation calls `run_experiment` and logs its reading - and say that they are
the offline policy, not a researcher.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aiscientist import candidates
from aiscientist.llm.offline import BANNER, Exchange, PolicyContext, PolicyReply, editable_files, register_role_policy, strip_line_numbers

PLAN = "plan/prioritized_tasks.md"
CHANGE = re.compile(r"^- change: (\{.*\})$", re.M)
MARKED = re.compile(r"^(EDIT|REVERT) (\{.*\})$", re.M)
ANALYSIS_DONE = f"{BANNER} Wrote paper_analysis/summary.md (targets, baseline, code/method/evaluation notes, implementation details) from the task text and the readers' notes."


def _field(ctx: PolicyContext, name: str) -> str:
    found = re.findall(rf"^{name}: (.*)$", ctx.prompt_text, re.M)
    return found[-1].strip() if found else ""


def _bus_off(ctx: PolicyContext) -> bool:
    return "File-as-Bus is OFF" in ctx.prompt_text


def _reads(ctx: PolicyContext) -> dict[str, str]:
    """Contents of the files read so far (whole-file reads from line 1)."""
    return {str(e.arguments.get("path")): strip_line_numbers(e.result or "") for e in ctx.history if e.name == "read_file" and not e.failed}


def _read_calls(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    return [("read_file", {"path": p, "max_lines": 2000}) for p in paths]


# ---- comprehension --------------------------------------------------------------------


def reader_policy(ctx: PolicyContext) -> PolicyReply:
    files = [f.strip() for f in _field(ctx, "Start with these files").split(",") if f.strip()]
    tried = {str(e.arguments.get("path")) for e in ctx.history if e.name == "read_file"}
    todo = [f for f in files if f not in tried]
    if todo:
        return PolicyReply(f"{BANNER} Reading {len(todo)} file(s).", _read_calls(todo))
    axis = _field(ctx, "Axis").split(" ")[0] or "code"
    notes = [f"{BANNER} notes on the {axis} axis (extracted mechanically, not interpreted):"]
    for path, text in _reads(ctx).items():
        notes.append(f"- {path}: " + _digest(text, axis if path.startswith("submission/") else "evaluation"))
    return ctx.finish("\n".join(notes))


def _digest(text: str, axis: str) -> str:
    lines = text.splitlines()
    doc = next((line.strip().strip('"#').strip() for line in lines if line.strip()), "")
    defs = re.findall(r"^\s*(?:def|class) (\w+)", text, re.M)
    knobs = [lines[c.line - 1].strip() for c in candidates.find_candidates(text)] if axis != "evaluation" else []
    metric_lines = [f"line {i}: {line.strip()[:100]}" for i, line in enumerate(lines, 1) if axis == "evaluation" and re.search(r"mse|acc|loss|metric|final_info|split", line, re.I)]
    parts = [doc[:160]]
    if defs:
        parts.append("defines " + ", ".join(defs[:10]))
    if knobs:
        parts.append("knobs: " + "; ".join(f"`{k}`" for k in dict.fromkeys(knobs)))
    if metric_lines:
        parts.append("; ".join(metric_lines[:5]))
    return " | ".join(p for p in parts if p)


def comprehension_policy(ctx: PolicyContext) -> PolicyReply:
    if any(e.name == "write_file" and not e.failed for e in ctx.history):
        return ctx.finish(ANALYSIS_DONE)
    text = ctx.prompt_text

    def grab(prefix: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith(prefix)]

    notes = {axis: body.strip() for axis, body in re.findall(r"^### (\w+)\n(.*?)(?=^### |\Z)", text.split("## Notes from readers", 1)[-1], re.M | re.S)}
    ambiguities = [] if grab("Baseline:") else ["- The task states no baseline value: the first experiment establishes it."]
    if not any("target" in line for line in grab("Baseline:")):
        ambiguities.append("- No target value is given: any validated improvement over the baseline counts.")
    content = "\n".join(
        [
            "# Paper / task analysis",
            f"_{BANNER}_",
            "",
            "## Targets and metrics",
            *grab("Optimise"), *grab("Constraint:"),
            "",
            "## Baseline",
            *(grab("Baseline:") or ["(not stated)"]),
            "",
            "## Method structure",
            notes.get("method", "(no reader notes)"),
            "",
            "## Code structure",
            notes.get("code", "(no reader notes)"),
            "",
            "## Evaluation protocol",
            notes.get("evaluation", "(no reader notes)"),
            "",
            "## Ambiguities",
            *(ambiguities or ["- None detected by the offline policy (it cannot judge scientific ambiguity)."]),
            "",
            "## Implementation details",
            *grab("Editable files:"), *grab("Protected (read-only) files:"), *grab("Experiment commands:"),
        ]
    )
    return _write_and_finish(ctx, f"{BANNER} Writing the analysis.", "paper_analysis/summary.md", content + "\n", ANALYSIS_DONE)


def _write_and_finish(ctx: PolicyContext, content: str, path: str, text: str, summary: str) -> PolicyReply:
    """Write `path` and finish in the same turn (one call fewer)."""
    return PolicyReply(content, [("write_file", {"path": path, "content": text}), *ctx.finish(summary).calls])


# ---- prioritization -------------------------------------------------------------------


def plan_changes(ctx: PolicyContext, contents: dict[str, str]) -> list[tuple[str, candidates.Change]]:
    """Every candidate knob in two variants, ordered for breadth: the first variant of
    every knob before any second variant."""
    rounds: list[list[tuple[str, candidates.Change]]] = [[], []]
    for path in sorted(contents):
        for cand in candidates.find_candidates(contents[path]):
            seen: set[str] = set()
            for variant in range(2):
                change = candidates.perturb(contents[path], cand, ctx.rng("plan", path, cand.line, cand.start, variant))
                if change is not None and change.new not in seen:
                    seen.add(change.new)
                    rounds[len(seen) - 1].append((path, change))
    return rounds[0] + rounds[1]


def prioritization_policy(ctx: PolicyContext) -> PolicyReply:
    written = [e for e in ctx.history if e.name == "write_file" and not e.failed]
    if written:
        return ctx.finish(_plan_written(str(written[-1].arguments.get("content", ""))))
    files = [] if _bus_off(ctx) else editable_files(ctx.prompt_text)  # bus off: the code is not prioritization's to read
    contents = _reads(ctx)
    todo = [f for f in files if f not in contents and f not in {str(e.arguments.get("path")) for e in ctx.history}]
    if todo:
        return PolicyReply(f"{BANNER} Reading the editable files.", _read_calls(todo))
    changes = plan_changes(ctx, contents)
    lines = [
        "# Prioritized tasks",
        f"_{BANNER}: candidates are tunable literals found mechanically; expected gains are unknown. "
        "Ranked for breadth: one variant of every knob before any second variant._",
        "",
    ]
    for rank, (path, change) in enumerate(changes):
        tier = min(3, rank * 4 // max(1, len(changes)))
        lines += [
            f"## P{tier}. #{rank + 1}: {change.description} in {path}",
            "- expected gain: unknown (offline); feasibility: high (one line); depends on: nothing",
            f"- change: {json.dumps({'path': path, 'old': change.old, 'new': change.new})}",
            "",
        ]
    if not changes:
        lines.append("No candidate change: " + ("with File-as-Bus off this role cannot read the code; implementation chooses changes itself." if _bus_off(ctx) else "no tunable literal was found in the editable files."))
    text = "\n".join(lines)
    return _write_and_finish(ctx, f"{BANNER} Writing the plan ({len(changes)} candidates).", PLAN, text, _plan_written(text))


def _plan_written(plan: str) -> str:
    entries = re.findall(r"^## (P\d\. .*)$", plan, re.M)
    top = "; ".join(entries[:3]) or "no candidates"
    return f"{BANNER} Wrote {PLAN} with {len(entries)} candidate changes ranked for breadth. Top: {top}"


# ---- implementation -------------------------------------------------------------------


def implementation_policy(ctx: PolicyContext) -> PolicyReply:
    """Apply plan entry k (the Task says `candidate #k`) with the exact edit the plan
    gives, after the REVERTs the orchestrator asks for; the edit tool checks that the
    text occurs once. Only when the plan has no entry k, or it does not apply, read the
    editable files and pick the next entry that applies (or a seeded perturbation)."""
    history = ctx.history
    edits = [e for e in history if e.name == "edit_file"]
    marked = [(kind, json.loads(body)) for kind, body in MARKED.findall(ctx.prompt_text)]
    read_code = max((i for i, e in enumerate(history) if e.name == "read_file" and e.arguments.get("path") != PLAN), default=-1)
    if edits and (not edits[-1].failed or history.index(edits[-1]) > read_code):
        return ctx.finish(_implementation_summary(ctx, edits, marked))
    if _field(ctx, "Mode") == "fix":
        target = [m for kind, m in marked if kind == "EDIT"]
        if not target:
            return ctx.finish(f"{BANNER} Nothing to fix: the context names no EDIT to undo.")
        m = target[-1]
        return _edit_and_finish(ctx, f"{BANNER} Undoing the change that failed.", [("edit_file", _undo(m))], marked)
    plan = [json.loads(body) for body in CHANGE.findall(ctx.prompt_text)]
    read_paths = {str(e.arguments.get("path")) for e in history if e.name == "read_file"}
    if not plan and PLAN not in read_paths and not _bus_off(ctx):
        return PolicyReply(f"{BANNER} Reading the plan.", _read_calls([PLAN]))
    plan = plan or [json.loads(body) for body in CHANGE.findall(_reads(ctx).get(PLAN, ""))]
    k = int((re.findall(r"candidate #(\d+)", _field(ctx, "Task")) or ["1"])[0])
    entry = plan[k - 1] if k <= len(plan) else None
    if entry is not None and not edits and entry["old"] != entry["new"]:
        reverts = [("edit_file", _undo(m)) for kind, m in marked if kind == "REVERT"]
        return _edit_and_finish(ctx, f"{BANNER} Applying candidate #{k}.", [*reverts, ("edit_file", entry)], marked)
    todo = [f for f in editable_files(ctx.prompt_text) if f not in read_paths]
    if todo:
        return PolicyReply(f"{BANNER} Reading the editable files.", _read_calls(todo))
    contents = _reads(ctx)
    calls: list[tuple[str, dict[str, Any]]] = []
    for kind, m in marked:
        if kind == "REVERT" and m["path"] in contents and contents[m["path"]].count(m["new"]) == 1:
            contents[m["path"]] = contents[m["path"]].replace(m["new"], m["old"], 1)
            calls.append(("edit_file", _undo(m)))
    choice = _pick(ctx, plan, contents, k)
    if choice is None:
        return ctx.finish(f"{BANNER} No applicable change left in the plan or the code.") if not calls else PolicyReply(f"{BANNER} Reverting only.", calls)
    calls.append(("edit_file", choice))
    return _edit_and_finish(ctx, f"{BANNER} Applying candidate #{k}.", calls, marked)


def _undo(change: dict[str, str]) -> dict[str, str]:
    return {"path": change["path"], "old": change["new"], "new": change["old"]}


def _edit_and_finish(ctx: PolicyContext, content: str, edits: list[tuple[str, dict[str, Any]]], marked: list[tuple[str, dict[str, str]]]) -> PolicyReply:
    """The edits and, in the same turn, the summary they earn if they apply; the loop
    refuses that finish when an edit fails, and the next turn deals with the failure."""
    done = [Exchange(name, args, f"edited {args['path']}") for name, args in edits]
    earlier = [e for e in ctx.history if e.name == "edit_file"]
    return PolicyReply(content, [*edits, *ctx.finish(_implementation_summary(ctx, earlier + done, marked)).calls])


def _pick(ctx: PolicyContext, plan: list[dict[str, str]], contents: dict[str, str], k: int) -> dict[str, str] | None:
    """Plan entry k (or the next one that still applies); past the plan's end, a fresh
    seeded perturbation of the current code."""
    for entry in plan[k - 1 :]:
        if entry.get("path") in contents and contents[entry["path"]].count(entry["old"]) == 1 and entry["old"] != entry["new"]:
            return entry
    rng = ctx.rng("explore", k)
    options = [(path, c) for path in sorted(contents) for c in candidates.find_candidates(contents[path])]
    rng.shuffle(options)
    for path, cand in options:
        change = candidates.perturb(contents[path], cand, rng)
        if change is not None:
            return {"path": path, "old": change.old, "new": change.new}
    return None


def _implementation_summary(ctx: PolicyContext, edits: list[Any], marked: list[tuple[str, dict[str, str]]]) -> str:
    last = edits[-1]
    args = {k: str(last.arguments.get(k, "")) for k in ("path", "old", "new")}
    what = f"`{args['old'].strip()}` -> `{args['new'].strip()}` in {args['path']}"
    if last.failed:
        return f"{BANNER} The edit {what} failed: {(last.result or '')[:300]}"
    if _field(ctx, "Mode") == "fix":
        return f"Reverted {what} (undoing the change that failed).\n{BANNER}\nREVERTED {json.dumps(args)}"
    undone = [_undo(m) for kind, m in marked if kind == "REVERT"]
    count = sum(1 for e in edits[:-1] if not e.failed and e.arguments in undone)
    reverted = f" after reverting {count} earlier change(s)" if count else ""
    return f"Applied {what}{reverted}.\n{BANNER}\nEDIT {json.dumps(args)}"


# ---- experimentation and helper -------------------------------------------------------


def experimentation_policy(ctx: PolicyContext) -> PolicyReply:
    runs = [e for e in ctx.history if e.name == "run_experiment"]
    if not runs:
        return PolicyReply(f"{BANNER} Running the experiment.", [("run_experiment", {"hypothesis": _field(ctx, "Hypothesis") or "measure the current code"})])
    result = runs[-1].result or ""
    if runs[-1].failed:
        return ctx.finish(f"{BANNER} No experiment ran: {result[:300]}")
    verdict = (re.findall(r"^verdict: (.*)$", result, re.M) or ["unknown"])[-1]
    analysis = f"{BANNER} reading of step: {verdict}. The offline policy keeps changes that set a new best and reverts the others."
    return PolicyReply(f"{BANNER} Logging and reporting.", [("append_log", {"log": "exp_log", "text": analysis}), ("finish", {"summary": result})])


def helper_policy(ctx: PolicyContext) -> PolicyReply:
    if any(e.name == "write_file" for e in ctx.history):
        return ctx.finish(f"{BANNER} Wrote the job's notes under scratch/.")
    job = _field(ctx, "Job") or "job"
    slug = re.sub(r"[^a-z0-9]+", "-", job.lower()).strip("-")[:40] or "job"
    return PolicyReply(f"{BANNER} Noting the job.", [("write_file", {"path": f"scratch/{slug}.md", "content": f"{BANNER}\nJob: {job}\n"})])


def register() -> None:
    for role, handler in {
        "comprehension-reader": reader_policy,
        "comprehension": comprehension_policy,
        "prioritization": prioritization_policy,
        "implementation": implementation_policy,
        "experimentation": experimentation_policy,
        "helper": helper_policy,
    }.items():
        register_role_policy(role, handler, replace=True)
