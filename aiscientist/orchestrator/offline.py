"""The orchestrator's offline policy (the `offline` model answering as the orchestrator).

It calls comprehension, prioritization, then implementation and experimentation in turn
until the step budget is spent (with File-as-Bus on, several calls per decision). With
File-as-Bus off, implementation gets the step outcomes seen so far in its `context`; the
hypothesis experimentation gets is the change's marker, so the log pairs each change with
its metric. The specialists' own policies are in their modules (`aiscientist/specialists/`).
"""

from __future__ import annotations

import re

import aiscientist.llm.offline.search as search
from aiscientist.llm.offline.backend import BANNER, PolicyContext, PolicyReply
from aiscientist.llm.offline.solo import Call

STEP_BLOCK = re.compile(r"^\[step (\d+)\] .*?(?=^\[step \d+\] |^details: |\Z)", re.M | re.S)
FOCUS = "targets, metric and baseline, method structure, evaluation protocol"
GUIDANCE = "every one-step change of a literal, each direction"
REVISE = "revert the last change unless it set a new best, then apply the next untried change"
KEPT = "the best validated step is kept."


def orchestrator_policy(seen: PolicyContext) -> PolicyReply:
    """With File-as-Bus on: understand + plan + first change; then measure + next change."""
    f = seen.facts
    count, bus = f.get("counters") or {}, f.get("bus", True)
    steps_done, budget = int(f.get("steps_done", 0)), int(f.get("steps_budget", 1))
    if "comprehension" not in seen.tool_names or steps_done >= budget:
        reason = f"{BANNER} step budget spent ({steps_done} steps); {KEPT}"
        return PolicyReply(f"{BANNER} Submitting.", [("submit", {"reason": reason})])
    calls: list[Call] = []
    if not count.get("comprehension"):
        calls.append(("comprehension", {"focus": FOCUS}))
    if not count.get("prioritization") and (bus or not calls):
        analysis = "" if bus else next((e.result or "" for e in reversed(seen.calls_to("comprehension"))), "")
        calls.append(("prioritization", {"guidance": GUIDANCE, "context": analysis}))
    specialist = [e for e in seen.history if e.name in ("implementation", "experimentation")]
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
        asked = [n for n in f.get("guidance") or [] if search.GUIDED.search(str(n))]  # a person's `try NAME=VALUE`
        task = f"{REVISE}; first, as the person's guidance asks: {asked[0]}" if asked else REVISE
        calls.append(("implementation", {"mode": "explore", "task": task, "context": "" if bus else _outcomes(seen)}))
    return PolicyReply(f"{BANNER} {', '.join(name for name, _ in calls)}.", calls)


def _outcomes(seen: PolicyContext) -> str:
    """Every `[step N]` outcome block seen (in implementation contexts and experimentation results), once each."""
    blocks: dict[int, str] = {}
    for e in seen.history:
        sources = {"implementation": str(e.arguments.get("context", "")), "experimentation": e.result or ""}
        for match in STEP_BLOCK.finditer(sources.get(e.name, "")):
            blocks.setdefault(int(match.group(1)), match.group(0).strip())
    return "\n".join(blocks[k] for k in sorted(blocks))
