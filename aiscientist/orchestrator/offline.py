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
from aiscientist.llm.offline.backend import BANNER, Exchange, PolicyContext, PolicyReply
from aiscientist.llm.offline.solo import Call
from aiscientist.specialists.measured import NOT_RUN

STEP_BLOCK = re.compile(r"^\[step (\d+)\] .*?(?=^\[step \d+\] |^details: |\Z)", re.M | re.S)
FOCUS = "targets, metric and baseline, method structure, evaluation protocol"
GUIDANCE = "every one-step change of a literal, each direction"
REVISE = "revert the last change unless it set a new best, then apply the next untried change"
KEPT = "the best validated step is kept."
NOTHING_LEFT = "No untried change is left"  # the implementation policy's words (specialists/implementation.py)
NOT_RUN_HEAD = NOT_RUN.split("{", 1)[0]  # experimentation's, for code measured already (specialists/measured.py)


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
    if not calls and _nothing_left_to_measure(specialist):
        reason = f"{BANNER} no untried change is left and the code is measured; {KEPT}"
        return PolicyReply(f"{BANNER} Submitting.", [("submit", {"reason": reason})])
    if not calls and specialist and specialist[-1].name == "implementation" and _tried(specialist[-1]):
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


def _tried(call: Exchange) -> bool:
    """Whether an implementation call left something to measure: it finished, or found no untried change (then
    the code as it is is measured); one that failed (a model outage, a change undone) is called again."""
    result = call.result or ""
    return result.lstrip().startswith("[implementation: done") or NOTHING_LEFT in result


def _nothing_left_to_measure(specialist: list[Exchange]) -> bool:
    """Implementation found no untried change, and experimentation then did not run the code: measured already."""
    return (
        len(specialist) >= 2
        and NOTHING_LEFT in (specialist[-2].result or "")
        and (specialist[-1].result or "").find(NOT_RUN_HEAD) >= 0
    )


def _outcomes(seen: PolicyContext) -> str:
    """Every `[step N]` outcome block seen (in implementation contexts and experimentation results), once each."""
    blocks: dict[int, str] = {}
    for e in seen.history:
        sources = {"implementation": str(e.arguments.get("context", "")), "experimentation": e.result or ""}
        for match in STEP_BLOCK.finditer(sources.get(e.name, "")):
            blocks.setdefault(int(match.group(1)), match.group(0).strip())
    return "\n".join(blocks[k] for k in sorted(blocks))
