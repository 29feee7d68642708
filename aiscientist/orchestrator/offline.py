"""Offline policies for the orchestrator and the flat agent (the `offline` model).

Deterministic and stateless: each answer is derived from the prompt's status block
(counters, steps used) and the recent tool results. The orchestrator policy calls
comprehension, then prioritization, then alternates implementation (explore, or fix
after a failed run, reverting a change that did not improve) and experimentation until
the step budget is spent, then submits. The flat policy does the same engineering in
one agent. Both are engineering baselines, not research.
"""

from __future__ import annotations

import re

from aiscientist import candidates
from aiscientist.llm.offline import BANNER, PolicyContext, PolicyReply, editable_files, register_role_policy, step_budget, strip_line_numbers

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
    """The single-agent ablation offline: read the editable files, then repeatedly change
    one literal (a seeded perturbation of the current code), run, keep the change if it
    set a new best and revert it otherwise, until the step budget is spent."""
    submit = PolicyReply(f"{BANNER} The step budget is spent; submitting.", [("submit", {"reason": f"{BANNER} step budget spent; the best validated step is kept."})])
    runs = [e for e in ctx.history if e.name == "run_experiment"]
    if "run_experiment" not in ctx.tool_names or len(runs) >= (step_budget(ctx.prompt_text) or 1) or (runs and "step budget reached" in (runs[-1].result or "")):
        return submit
    files = editable_files(ctx.prompt_text)
    read = {str(e.arguments.get("path")) for e in ctx.history if e.name == "read_file" and not e.failed}
    if [f for f in files if f not in read]:
        return PolicyReply(f"{BANNER} Reading the editable files.", [("read_file", {"path": f, "max_lines": 5000}) for f in files if f not in read])
    contents, applied, revert = _replay_edits(ctx)
    last = ctx.history[-1]
    if last.name == "edit_file" and not last.failed and applied is not None:
        return PolicyReply(f"{BANNER} Measuring the change.", [("run_experiment", {"hypothesis": f"{BANNER} `{applied[1]}` -> `{applied[2]}` in {applied[0]} (a blind perturbation)"})])
    if revert is not None:
        path, old, new = revert
        return PolicyReply(f"{BANNER} Reverting a change that did not set a new best.", [("edit_file", {"path": path, "old": new, "new": old})])
    rng = ctx.rng("flat", len(runs))
    options = [(path, c) for path in sorted(contents) for c in candidates.find_candidates(contents[path])]
    rng.shuffle(options)
    for path, cand in options:
        change = candidates.perturb(contents[path], cand, rng)
        if change is not None:
            return PolicyReply(f"{BANNER} Step {len(runs) + 1}: {change.description}.", [("edit_file", {"path": path, "old": change.old, "new": change.new})])
    return submit


def _replay_edits(ctx: PolicyContext) -> tuple[dict[str, str], tuple[str, str, str] | None, tuple[str, str, str] | None]:
    """(current file contents, change applied since the last run, change to revert)."""
    contents: dict[str, str] = {}
    applied = revert = None
    for e in ctx.history:
        path = str(e.arguments.get("path", ""))
        if e.name == "read_file" and not e.failed:
            contents[path] = strip_line_numbers(e.result or "")
        elif e.name == "edit_file" and not e.failed and path in contents:
            old, new = str(e.arguments.get("old", "")), str(e.arguments.get("new", ""))
            contents[path] = contents[path].replace(old, new, 1)
            if revert == (path, new, old):
                revert = None
            else:
                applied = (path, old, new)
        elif e.name == "run_experiment":
            verdict = (re.findall(r"^verdict: (.*)$", e.result or "", re.M) or [""])[-1]
            revert = applied if applied and not verdict.startswith("new best") else None
            applied = None
    return contents, applied, revert


def register() -> None:
    register_role_policy("orchestrator", orchestrator_policy, replace=True)
    register_role_policy("flat", flat_policy, replace=True)


__all__ = ["register", "orchestrator_policy", "flat_policy"]
