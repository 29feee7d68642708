"""Offline policies for the orchestrator and the flat agent (the `offline` model).

Deterministic and stateless: each answer is derived from the prompt's status block
(counters, steps used) and the recent tool results. The orchestrator policy calls
comprehension, then prioritization, then alternates implementation (explore, or fix
after a failed run, reverting a change that did not improve) and experimentation until
the step budget is spent, then submits. It is an engineering baseline, not research.
"""

from __future__ import annotations

import re

from aiscientist.llm.offline import BANNER, PolicyContext, PolicyReply, default_policy, register_role_policy

EDIT = re.compile(r"^EDIT (\{.*\})$", re.M)


def counters(ctx: PolicyContext) -> dict[str, int]:
    found = re.findall(r"^Counters: (.*)$", ctx.prompt_text, re.M)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", found[-1])} if found else {}


def orchestrator_policy(ctx: PolicyContext) -> PolicyReply:
    count = counters(ctx)
    if "comprehension" not in ctx.tool_names or count.get("steps_done", 0) >= count.get("steps_budget", 1):
        return PolicyReply(f"{BANNER} The step budget is spent; submitting.", [("submit", {"reason": f"{BANNER} step budget spent ({count.get('steps_done', 0)} steps); the best validated step is kept."})])
    if not count.get("comprehension"):
        return PolicyReply(f"{BANNER} Stage understand.", [("comprehension", {"focus": "targets, metric and baseline, method structure, evaluation protocol"})])
    bus_off = "File-as-Bus is off" in ctx.prompt_text
    if not count.get("prioritization"):
        analysis = _output_of(ctx, "comprehension") if bus_off else ""
        return PolicyReply(f"{BANNER} Stage plan.", [("prioritization", {"guidance": "rank diverse candidate changes, one per knob before any second variant", "context": analysis})])
    specialist = [e for e in ctx.history if e.name in ("implementation", "experimentation")]
    last = specialist[-1] if specialist else None
    if last is not None and last.name == "implementation":
        head = next((line for line in (last.result or "").splitlines()[1:] if line.strip()), "the last change")
        return PolicyReply(f"{BANNER} Measuring the change.", [("experimentation", {"hypothesis": f"{head.strip()[:300]} should improve the target metric (untested offline guess)"})])
    impl = next((e for e in reversed(specialist) if e.name == "implementation"), None)
    edit = EDIT.findall(impl.result or "") if impl else []
    verdict = re.findall(r"^verdict: (.*)$", last.result or "", re.M) if last else []
    k = count.get("explore", 0) + 1
    plan = "\n".join(line for line in _output_of(ctx, "prioritization").splitlines() if line.startswith(("## P", "- change:"))) if bus_off else ""
    if verdict and verdict[-1].startswith("failed") and edit:
        context = f"EDIT {edit[-1]}\nThe last experiment failed:\n{(last.result or '')[:1500]}"
        return PolicyReply(f"{BANNER} The last run failed: fixing by undoing the change that broke it.", [("implementation", {"mode": "fix", "task": "the last experiment failed; undo the change named in EDIT", "context": context})])
    context = plan
    if verdict and not verdict[-1].startswith("new best") and edit:
        context = f"REVERT {edit[-1]}\n" + context
    task = f"apply candidate #{k} of the plan" + (" after reverting the change in REVERT (it did not improve)" if context.startswith("REVERT") else "")
    return PolicyReply(f"{BANNER} Exploring candidate #{k}.", [("implementation", {"mode": "explore", "task": task, "context": context.strip()})])


def _output_of(ctx: PolicyContext, specialist: str) -> str:
    """File-as-Bus off: a specialist's output exists only in the conversation."""
    for exchange in reversed(ctx.history):
        if exchange.name == specialist and exchange.result:
            return exchange.result
    return ""


def flat_policy(ctx: PolicyContext) -> PolicyReply:
    """The single-agent ablation offline: read, change one literal, run, keep or revert."""
    if "run_experiment" not in ctx.tool_names:
        return PolicyReply(f"{BANNER} The step budget is spent; submitting.", [("submit", {"reason": f"{BANNER} step budget spent; the best validated step is kept."})])
    return default_policy(ctx)


def register() -> None:
    register_role_policy("orchestrator", orchestrator_policy, replace=True)
    register_role_policy("flat", flat_policy, replace=True)


__all__ = ["register", "orchestrator_policy", "flat_policy"]
