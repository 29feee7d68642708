"""Offline policies of the single-conversation agents and the bench's other baselines.

`solo` (any role without its own policy; flat, linear, basic, iterative): read the
editable files, then change one literal (`search.next_change`), run an experiment whose
hypothesis carries the change's marker and - if it keeps only what helps (solo, flat) -
revert a change that set no new best; until the step budget is spent. AIDE answers each
stage with a plan and the whole target file (from the facts); The AI Scientist proposes
ideas (one literal to tune each) and its coder applies an idea's change with edit_file.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import aiscientist.llm.offline.search as search
from aiscientist.llm.offline.backend import BANNER, Exchange, PolicyContext, PolicyReply, register_role_policy

HEREDOC = "AISCI_EOF"
Call = tuple[str, dict[str, Any]]


def editable(ctx: PolicyContext) -> list[str]:
    return [f for f in ctx.facts.get("editable") or [] if not any(ch in f for ch in "*?[")]


def tries(ctx: PolicyContext, runs: list[tuple[search.Edit | None, float | None]]) -> list[search.Try]:
    return search.score(runs, ctx.facts.get("direction"), ctx.facts.get("baseline"))


def solo(ctx: PolicyContext, revert: bool = True, bash: bool = False) -> PolicyReply:
    runs = ctx.calls_to("run_experiment")
    missing = {"run_experiment", "bash" if bash else "edit_file"} - ctx.tool_names
    if missing:
        return ctx.finish(f"{BANNER} No {', '.join(sorted(missing))} tool offered; nothing to do.")
    limit = int(ctx.facts.get("steps_budget") or ctx.max_steps)
    if len(runs) >= limit or (runs and runs[-1].failed and "budget" in (runs[-1].result or "")):
        return ctx.finish(
            f"{BANNER} The step budget is spent ({len(runs)} experiments); the best validated step is kept."
        )
    files = editable(ctx)
    if not files:  # a paper task: this policy cannot write a reproduction, only run what is there
        if runs:
            return ctx.finish(f"{BANNER} Nothing more the offline policy can do without editable files.")
        return PolicyReply(
            "Running the task's commands on the submission as it is.",
            [("run_experiment", {"hypothesis": "run the submission unchanged"})],
        )
    contents = replay(ctx)
    unread = [f for f in files if f not in contents]
    if unread:
        return PolicyReply(f"Reading {', '.join(unread)}.", [read_call(ctx, f) for f in unread])
    last = ctx.history[-1]
    if last.name in ("edit_file", "bash") and not last.failed:
        before = replay(ctx, ctx.history[:-1])
        edit = search.identify(before, *_written(last, before)) if _written(last, before) else None
        hypothesis = f"{edit.marker() if edit else 'an offline change'} {BANNER} {edit.what if edit else ''} (a blind change of one literal)"
        return PolicyReply("Measuring the change.", [("run_experiment", {"hypothesis": hypothesis})])
    done = tries(
        ctx,
        [(search.parse_marker(str(r.arguments.get("hypothesis", ""))), search.outcome(r.result or "")) for r in runs],
    )
    back = search.revert_last(contents, done) if revert else None
    calls: list[Call] = [("edit_file", back.args())] if back else []
    edit = search.next_change(contents, done, ctx.rng("change", len(runs)))
    if edit is None:
        return ctx.finish(f"{BANNER} No untried change is left after {len(runs)} experiments.", *calls)
    if bash:
        text = contents[edit.path].replace(edit.old, edit.new, 1)
        command = (
            f"cat > {edit.path.removeprefix('submission/')} <<'{HEREDOC}'\n{text.removesuffix(chr(10))}\n{HEREDOC}"
        )
        return PolicyReply(f"Step {len(runs) + 1}: {edit.what}.", [("bash", {"command": command})])
    return PolicyReply(f"Step {len(runs) + 1}: {edit.what}.", [*calls, ("edit_file", edit.args())])


def read_call(ctx: PolicyContext, path: str) -> Call:
    if "read_file_chunk" in ctx.tool_names and "read_file" not in ctx.tool_names:
        return ("read_file_chunk", {"path": path, "start": 1, "n": 5000})
    return ("read_file", {"path": path, "max_lines": 5000})


def replay(ctx: PolicyContext, history: list[Exchange] | None = None) -> dict[str, str]:
    """Current contents of the files read whole: reads, edits and heredoc rewrites replayed."""
    contents: dict[str, str] = {}
    for e in ctx.history if history is None else history:
        match = _heredoc(e)
        if e.failed:
            continue
        if (
            e.name in ("read_file", "read_file_chunk")
            and int(e.arguments.get("start_line", e.arguments.get("start", 1)) or 1) == 1
        ):
            contents[e.path] = search.strip_line_numbers(e.result or "")
        elif e.name == "edit_file" and e.path in contents:
            contents[e.path] = contents[e.path].replace(
                str(e.arguments.get("old", "")), str(e.arguments.get("new", "")), 1
            )
        elif match and f"submission/{match[0]}" in contents:
            contents[f"submission/{match[0]}"] = match[1] + "\n"
    return contents


def _heredoc(e: Exchange) -> tuple[str, str] | None:
    match = (
        re.match(rf"cat > (\S+) <<'{HEREDOC}'\n(.*)\n{HEREDOC}$", str(e.arguments.get("command", "")), re.S)
        if e.name == "bash"
        else None
    )
    return (match.group(1), match.group(2)) if match else None


def _written(e: Exchange, before: dict[str, str]) -> tuple[str, str, str] | None:
    """(path, old line, new line) of an edit or a one-line heredoc rewrite."""
    if e.name == "edit_file":
        return e.path, str(e.arguments.get("old", "")), str(e.arguments.get("new", ""))
    match = _heredoc(e)
    path = f"submission/{match[0]}" if match else ""
    if not match or path not in before:
        return None
    changed = [(a, b) for a, b in zip(before[path].splitlines(), match[1].splitlines()) if a != b]
    return (path, *changed[0]) if len(changed) == 1 else None


def aide(ctx: PolicyContext) -> PolicyReply:
    stage, code = str(ctx.facts.get("stage", "")), ctx.facts.get("code")
    if not isinstance(code, str):
        return PolicyReply("The facts carry no current code to change.")
    rng = ctx.rng(stage, ctx.facts.get("steps_left"), hashlib.sha256(code.encode()).hexdigest()[:16])
    applied = []
    for _ in range(2 if stage == "draft" else 1):
        options = [e for e in search.options_of({"f": code}) if e.key not in {a.key for a in applied}]
        if options:
            edit = rng.choice(options)
            code = code.replace(edit.old, edit.new, 1)
            applied.append(edit)
    what = "; ".join(f"{e.name} {e.before} -> {e.after}" for e in applied) or "no tunable literal found, code unchanged"
    return PolicyReply(f"{stage.capitalize()} by a blind perturbation: {what}.\n\n```python\n{code}\n```")


def ai_scientist(ctx: PolicyContext) -> PolicyReply:
    """Ideas (no tools): `want` new ideas after the `tried` ones; the coder turns idea n into a change of literal n."""
    if not ctx.tools:
        start, files = int(ctx.facts.get("tried", 0)), ", ".join(editable(ctx))
        ideas = [
            {
                "name": f"knob_{n}",
                "title": f"tune literal #{n} of the editable code",
                "experiment": f"Scale literal #{n} of {files} up or down; keep the better value.",
            }
            for n in range(start, start + int(ctx.facts.get("want", 3)))
        ]
        return PolicyReply("Ideas (blind tuning of literals):\n```json\n" + json.dumps(ideas, indent=1) + "\n```")
    contents = replay(ctx)
    unread = [f for f in editable(ctx) if f not in contents]
    if unread:
        return PolicyReply(f"Reading {', '.join(unread)}.", [read_call(ctx, f) for f in unread])
    if ctx.calls_to("edit_file"):
        return ctx.finish("Applied the idea's change.")
    idea = str((ctx.facts.get("idea") or {}).get("name", "knob_0"))
    n = int(idea.rsplit("_", 1)[-1]) if idea.rsplit("_", 1)[-1].isdigit() else 0
    names = list(dict.fromkeys(e.key for e in search.options_of(contents)))
    if not names:
        return ctx.finish("No tunable literal in the editable files; nothing changed.")
    key = names[n % len(names)]
    rng = ctx.rng("code", idea, ctx.facts.get("run"), ctx.facts.get("fix"))
    edit = rng.choice([e for e in search.options_of(contents) if e.key == key])
    return PolicyReply(f"Changing {edit.what}.", [("edit_file", edit.args())])


register_role_policy("solo", solo)
register_role_policy("flat", solo)
register_role_policy("linear", lambda ctx: solo(ctx, revert=False))
register_role_policy("basic", lambda ctx: solo(ctx, revert=False, bash=True))
register_role_policy("iterative", lambda ctx: solo(ctx, revert=False, bash=True))
register_role_policy("aide", aide)
register_role_policy("ai-scientist", ai_scientist)
