"""The orchestrator offline: comprehension, then prioritization, then implementation and
experimentation in turn until the step budget (the facts' counters) is spent; with
File-as-Bus on, several of these calls in one decision.

The hypothesis it hands experimentation is the marker of the change implementation
made, so the experiment log pairs each change with its metric. With File-as-Bus off
nobody else can read that log: the orchestrator passes the experiment outcomes it has
seen (and those it passed before) to implementation in `context`.
"""

from __future__ import annotations

import re

import aiscientist.offline.search as search
from aiscientist.offline.backend import BANNER, PolicyContext, PolicyReply, register_role_policy
from aiscientist.offline.solo import Call

STEP_BLOCK = re.compile(r"^\[step (\d+)\] .*?(?=^\[step \d+\] |^details: |\Z)", re.M | re.S)


def orchestrator(ctx: PolicyContext) -> PolicyReply:
    """With File-as-Bus on, one decision makes several calls in order (the files carry
    what the next needs): understand + plan + first change; then measure + next change."""
    f = ctx.facts
    count, bus = f.get("counters") or {}, f.get("bus", True)
    steps_done, budget = int(f.get("steps_done", 0)), int(f.get("steps_budget", 1))
    if "comprehension" not in ctx.tool_names or steps_done >= budget:
        return _submit(f"step budget spent ({steps_done} steps); the best validated step is kept.")
    calls: list[Call] = []
    if not count.get("comprehension"):
        calls.append(("comprehension", {"focus": "targets, metric and baseline, method structure, evaluation protocol"}))
    if not count.get("prioritization") and (bus or not calls):
        analysis = "" if bus else next((e.result or "" for e in reversed(ctx.history) if e.name == "comprehension"), "")
        calls.append(("prioritization", {"guidance": "every one-step change of a literal, each direction", "context": analysis}))
    specialist = [e for e in ctx.history if e.name in ("implementation", "experimentation")]
    if not calls and specialist and specialist[-1].name == "implementation":
        marker = search.parse_marker(specialist[-1].result or "")
        hypothesis = f"{marker.marker()} {marker.what} (an untested offline guess)" if marker else "no untried change is left: the current code, measured again"
        calls.append(("experimentation", {"hypothesis": hypothesis}))
        if marker is None and steps_done + 1 < budget:
            return PolicyReply(f"{BANNER} Nothing new to try: measuring the current code.", calls)
        if bus and steps_done + 1 >= budget:  # nothing left to change after the last step
            return PolicyReply(f"{BANNER} The last step, then submit.", [*calls, ("submit", {"reason": f"{BANNER} the last step of the budget ran; the best validated step is kept."})])
    if bus or not calls:
        task = "revert the last change unless it set a new best, then apply the next untried change"
        calls.append(("implementation", {"mode": "explore", "task": task, "context": "" if bus else _outcomes(ctx)}))
    return PolicyReply(f"{BANNER} {', '.join(name for name, _ in calls)}.", calls)


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
