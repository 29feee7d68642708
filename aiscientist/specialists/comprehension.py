"""Comprehension: Tier-2 readers look at independent axes in parallel threads (fresh
contexts, read-only tools); the specialist merges their notes into `paper_analysis/summary.md`.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.toolbox import build_toolbox
from aiscientist.agent.tools import clip
from aiscientist.llm.candidates import find_candidates
from aiscientist.llm.offline.backend import BANNER, PolicyContext, PolicyReply
from aiscientist.records.paths import (
    ANALYSIS,
    ANALYSIS_NOTES,
    ANALYSIS_SUMMARY,
    SUBMISSION,
    TASK_TEXT,
    in_submission,
)
from aiscientist.specialists.base import (
    CUT,
    SpecialistResult,
    call_brief,
    context_field,
    facts,
    run_specialist,
    shown_files,
    with_file,
)
from aiscientist.util import notices

ROLE, READER_ROLE = "comprehension", "comprehension-reader"
SUMMARY = ANALYSIS_SUMMARY
CODE_LINES = r'^\s*(?:def|class) \w+|^\s*[A-Za-z_][\w.]*\s*(?::[^=]+)?=\s*(?:[-+]?[\d.]|True|False)|^(?:"""|# )'
EVAL_LINES = r"(?i)mse|acc|loss|metric|final_info|split|^\s*(?:def|class) \w+|^(?:\"\"\"|# )"
NOTES_CHARS = 4000
PROSE_NOTES = 200  # a reader that answers with this much prose instead of finish has answered (the 1.5B model did)


class ComprehensionArgs(BaseModel):
    focus: str = Field(description="what to understand first (e.g. the evaluation protocol)")
    context: str = context_field()


AXES = {
    "code": "code structure: files, entry points, data flow, where the method's knobs live",
    "method": "method and algorithm: what the editable code computes, its hyper-parameters and assumptions",
    "evaluation": "evaluation protocol: how the metric is computed, on which split, what is protected",
}

READER_SYSTEM = """ROLE: comprehension-reader
You are a Tier-2 reader inside AiScientist's comprehension specialist. Read the files for
one axis of the task and return compact notes (facts with file:line references, no
speculation). You can only read. End with finish(summary=<your notes>)."""
READER_TURN = """Every file is shown above in full: do not read them again. Reply now with one call of
finish whose summary holds your notes on this axis."""
READER_CUT_TURN = """The files are shown above, some only in part: where a note says lines are not shown, read
them with the read_file call it names (its start_line), page after page. Then call finish with your notes
on this axis as its summary."""

# The 1.5B model wrote 565 tokens (56 s) on the tiny task, half of it restating the brief; asked for 150 words, 349
# tokens, for 80 words 526 (73 s of a ~290 s time to first experiment), every section at length: a small task's
# analysis is four lines of facts the later roles use (they see the files whole too)
SMALL_TASK_ANALYSIS = """The task is small: the analysis is these four lines only, facts from the files above:
Metric: <name, direction, baseline; how and on which split it is computed>
Code: <what the editable code does, in one sentence>
Knobs: <each constant or choice one could change, as file:line NAME = value>
Risks: <what could break a change (protected files, constraints), in a few words>"""
SYSTEM = f"""ROLE: comprehension
You are AiScientist's comprehension specialist. Turn the task, paper and code into a
structured analysis other specialists can work from, with the sections: Targets and metrics,
Baseline, Method structure, Evaluation protocol, Ambiguities, Implementation details (compact:
facts with file:line references). The analysis is your answer: call finish(summary=<the
analysis>) and it is saved as {ANALYSIS_SUMMARY}. You may add more files under {ANALYSIS}/."""


def reader_files(ctx: RunContext, axis: str) -> list[str]:
    task = ctx.task
    if axis == "code":
        names = [*task.editable, *task.related]
    elif axis == "method":
        names = list(task.editable)
    else:
        names = [*task.protected, *task.related]
    whole = task.description.strip() in task.summary()  # then task/task.md is the brief the reader already has
    files = ([] if whole else [TASK_TEXT]) + [in_submission(n) for n in dict.fromkeys(names) if "*" not in n]
    policy = ctx.ws.scope(ROLE).policy  # with File-as-Bus off, submission/ is not comprehension's to read
    return [f for f in files if policy.refusal("read", f) is None][:8] or [TASK_TEXT]


def run(ctx: RunContext, key: str, args: ComprehensionArgs) -> SpecialistResult:
    """Sized to the task: files that fit whole in one prompt of at most `specialists.reader_threshold_chars`
    are read by this call itself, in one answer; larger ones are split among readers, one per axis."""
    axes = ctx.config.specialists.readers
    files = shown_files(ctx, ROLE, [f for axis in axes for f in reader_files(ctx, axis)])
    if CUT not in files and len(files) <= ctx.config.specialists.reader_threshold_chars:
        return _read_alone(ctx, key, args, files)
    return _read_with_readers(ctx, key, args, axes, files)


def _read_alone(ctx: RunContext, key: str, args: ComprehensionArgs, files: str) -> SpecialistResult:
    """Every file is in the prompt whole: nothing to read, one answer (the analysis) is the call."""
    box = build_toolbox(ctx, ROLE)
    box.tools = {"finish": box.tools["finish"]}
    user = call_brief(
        ctx,
        f"Focus of this call: {args.focus}",
        args.context,
        files,
        f"Every file is shown above in full: do not read them again. {SMALL_TASK_ANALYSIS}\n"
        f"Reply now with finish(summary=<the four lines>); it is saved as {SUMMARY}.",
        facts(ctx, ROLE, args=args.model_dump()),
    )
    return with_file(ctx, run_specialist(ctx, ROLE, SYSTEM, user, box, key, deliverable=SUMMARY), SUMMARY)


def _read_with_readers(
    ctx: RunContext, key: str, args: ComprehensionArgs, axes: list[str], files: str
) -> SpecialistResult:
    """A reader that did not finish is a failure: no notes saved, the call not ok, naming it.
    Readers run in parallel up to the model's `max_parallel` (one at a time for a local server:
    they then share one prompt prefix, which the server's cache reuses)."""
    workers = min(len(axes), ctx.client(READER_ROLE).config.max_parallel or len(axes))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = dict(zip(axes, pool.map(lambda axis: _read_axis(ctx, key, axis, files), axes)))
    notes = {axis: text for axis, (text, finished) in results.items() if finished}
    failed = {axis: text for axis, (text, finished) in results.items() if not finished}
    for axis, text in failed.items():
        ctx.ws.events.record(READER_ROLE, "subagent.failed", {"key": key, "axis": axis, "error": clip(text, 1000)})
        notices.notify("failure", f"comprehension reader '{axis}' failed: {clip(text, 300)}")
    scope = ctx.ws.scope(ROLE)
    written = []
    for axis, text in notes.items():
        path = ANALYSIS_NOTES.format(axis)
        scope.write(path, f"# Reader notes: {axis}\n\n{text}\n")
        written.append(path)
    box = build_toolbox(ctx, ROLE)
    user = call_brief(
        ctx,
        f"Focus of this call: {args.focus}",
        args.context,
        "## Notes from readers\n"
        + ("\n\n".join(f"### {axis}\n{text}" for axis, text in notes.items()) or "(no reader finished)"),
        f"Readers that failed (no notes): {', '.join(failed)}; read those files yourself." if failed else "",
        f"Reply now with finish(summary=<the analysis>); it is saved as {SUMMARY} (the readers' notes are already"
        f" saved as {ANALYSIS_NOTES.format('<axis>')}).",
        facts(ctx, ROLE, args=args.model_dump()),
    )
    result = run_specialist(ctx, ROLE, SYSTEM, user, box, key, deliverable=SUMMARY)
    result.artifacts = written + [a for a in box.artifacts if a not in written]
    if failed:
        failures = "; ".join(f"reader '{axis}' failed: {clip(text, 300)}" for axis, text in failed.items())
        result.ok, result.summary = False, f"{failures}\n{result.summary}"
    return with_file(ctx, result, SUMMARY)


def _read_axis(ctx: RunContext, key: str, axis: str, files: str) -> tuple[str, bool]:
    """(notes, True) when the reader finished; (why it stopped, False) otherwise. The files
    come first and are the same for every axis; the axis is the prompt's last part."""
    box = build_toolbox(ctx, READER_ROLE, scope_role=ROLE)
    whole = CUT not in files
    if whole:  # nothing left to read: a small model re-read whole files until its turn limit
        box.tools = {"finish": box.tools["finish"]}
    focus = ", ".join(reader_files(ctx, axis))
    start = f"Axis: {axis} - {AXES[axis]}\nLook most at: {focus}"
    user = "\n\n".join([files, start, READER_TURN if whole else READER_CUT_TURN])
    result = run_specialist(
        ctx, READER_ROLE, READER_SYSTEM, user, box, f"{key}.r-{axis}", max_turns=6, prose_finish_chars=PROSE_NOTES
    )
    return clip(result.summary, NOTES_CHARS), result.ok


# The offline model's answer as this role (registered with AiScientist's arms: orchestrator/arms.py)


def reader_policy(seen: PolicyContext) -> PolicyReply:
    """Skim: one search per file for the lines that matter on the axis, then notes from the matches."""
    axis = str(seen.facts.get("axis", "code"))
    searched = {e.path for e in seen.calls_to("search_files")}
    todo = [f for f in seen.facts.get("files") or [] if f not in searched]
    if todo:
        return PolicyReply(
            f"{BANNER} Skimming {len(todo)} file(s).",
            [("search_files", {"pattern": _pattern(axis, f), "path": f}) for f in todo],
        )
    notes = [f"{BANNER} notes on the {axis} axis (extracted mechanically, not interpreted):"]
    for e in seen.calls_to("search_files"):
        if not e.failed:
            found = [line.split(":", 2) for line in (e.result or "").splitlines() if line.count(":") >= 2]
            notes.append(
                f"- {e.path}: " + _digest([(n, text) for _, n, text in found], _pattern(axis, e.path) == EVAL_LINES)
            )
    return seen.finish("\n".join(notes))


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


def offline_policy(seen: PolicyContext) -> PolicyReply:
    done = (
        f"{BANNER} Wrote {SUMMARY} from the task's facts; the readers' notes are in {ANALYSIS_NOTES.format('<axis>')}."
    )
    if any(e.name == "write_file" and not e.failed for e in seen.history):
        return seen.finish(done)
    f, whole = seen.facts, "write_file" not in seen.tool_names
    notes = "the files shown in the call" if whole else None
    baseline = "(not stated: the first experiment establishes it)" if f.get("baseline") is None else str(f["baseline"])
    sections = {
        "Targets and metrics": f"{f.get('metric')} ({f.get('direction')})",
        "Baseline": baseline,
        "Method structure": f"see {notes or ANALYSIS_NOTES.format('method')}",
        "Evaluation protocol": f"see {notes or ANALYSIS_NOTES.format('evaluation')}",
        "Ambiguities": "- No target value is given: any validated improvement over the baseline counts.",
        "Implementation details": "Editable files: "
        + ", ".join(f.get("editable") or ["(none)"])
        + f"; code notes: {notes or ANALYSIS_NOTES.format('code')}",
    }
    text = f"# Paper / task analysis\n_{BANNER}_\n\n" + "\n\n".join(f"## {k}\n{v}" for k, v in sections.items()) + "\n"
    if whole:  # the analysis is the answer (`deliverable`)
        return seen.finish(text)
    return seen.finish(done, ("write_file", {"path": SUMMARY, "content": text}))
