"""Offline policies of the bench's AIDE-style and AI-Scientist-style baselines.

AIDE answers each draft/improve/debug stage with a plan and the whole target file (the
facts carry the stage and the current code); The AI Scientist proposes ideas (one
literal to tune each) and its coder applies an idea's change with edit_file. The
single-conversation baselines (linear, basic, iterative) are in `solo`.
"""

from __future__ import annotations

import hashlib
import json

import aiscientist.offline.search as search
from aiscientist.offline.backend import PolicyContext, PolicyReply, register_role_policy
from aiscientist.offline.solo import editable, read_call, replay


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
    """Ideas (no tools): `want` new ideas, numbered after the `tried` ones; the coder
    (tools) turns idea n into a change of the n-th literal of the editable files."""
    if not ctx.tools:
        start, files = int(ctx.facts.get("tried", 0)), editable(ctx)
        ideas = [{"name": f"knob_{n}", "title": f"tune literal #{n} of the editable code", "experiment": f"Scale literal #{n} of {', '.join(files)} up or down; keep the better value."} for n in range(start, start + int(ctx.facts.get("want", 3)))]
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


register_role_policy("aide", aide)
register_role_policy("ai-scientist", ai_scientist)
