"""The orchestrator offline: comprehension, then prioritization, then implementation and
experimentation in turn until the step budget (the facts' counters) is spent.

The hypothesis it hands experimentation is the marker of the change implementation
made, so the experiment log pairs each change with its metric. With File-as-Bus off
nobody else can read that log: the orchestrator passes the experiment outcomes it has
seen (and those it passed before) to implementation in `context`.
"""

from __future__ import annotations

import re

from aiscientist.offline import search
from aiscientist.offline.backend import BANNER, PolicyContext, PolicyReply, register_role_policy

STEP_BLOCK = re.compile(r"^\[step (\d+)\] .*?(?=^\[step \d+\] |^details: |\Z)", re.M | re.S)


def orchestrator(ctx: PolicyContext) -> PolicyReply:
    f = ctx.facts
    count = f.get("counters") or {}
    steps_done, budget = int(f.get("steps_done", 0)), int(f.get("steps_budget", 1))
    specialist = [e for e in ctx.history if e.name in ("implementation", "experimentation")]
    last = specialist[-1] if specialist else None
    marker = search.parse_marker(last.result or "") if last is not None and last.name == "implementation" else None
    if "comprehension" not in ctx.tool_names or steps_done >= budget:
        return _submit(f"step budget spent ({steps_done} steps); the best validated step is kept.")
    if not count.get("comprehension"):
        return PolicyReply(f"{BANNER} Stage understand.", [("comprehension", {"focus": "targets, metric and baseline, method structure, evaluation protocol"})])
    bus = f.get("bus", True)
    if not count.get("prioritization"):
        analysis = "" if bus else next((e.result or "" for e in reversed(ctx.history) if e.name == "comprehension"), "")
        return PolicyReply(f"{BANNER} Stage plan.", [("prioritization", {"guidance": "every one-step change of a literal, each direction", "context": analysis})])
    if last is not None and last.name == "implementation":
        if marker is None:
            return _submit("implementation found no untried change; the best validated step is kept.")
        return PolicyReply(f"{BANNER} Measuring the change.", [("experimentation", {"hypothesis": f"{marker.marker()}\n{marker.what} (an untested offline guess)"})])
    context = "" if bus else _outcomes(ctx)
    return PolicyReply(f"{BANNER} Next change.", [("implementation", {"mode": "explore", "task": "revert the last change unless it set a new best, then apply the next untried change", "context": context})])


def _submit(reason: str) -> PolicyReply:
    return PolicyReply(f"{BANNER} Submitting.", [("submit", {"reason": f"{BANNER} {reason}"})])


def _outcomes(ctx: PolicyContext) -> str:
    """Every `[step N]` outcome block seen: in earlier implementation contexts and in
    experimentation results, each step once, in step order."""
    blocks: dict[int, str] = {}
    for e in ctx.history:
        text = str(e.arguments.get("context", "")) if e.name == "implementation" else (e.result or "") if e.name == "experimentation" else ""
        for match in STEP_BLOCK.finditer(text):
            blocks.setdefault(int(match.group(1)), match.group(0).strip())
    return "\n".join(blocks[k] for k in sorted(blocks))


register_role_policy("orchestrator", orchestrator)
