"""Prompts of the orchestrator and the flat agent, rebuilt from thin state at every decision."""

from __future__ import annotations

from typing import Any

from aiscientist.agent.context import RunContext
from aiscientist.llm.facts import facts_line
from aiscientist.orchestrator.state import COUNTED, OrchestratorState
from aiscientist.records.paths import ANALYSIS, EXP_LOG, EXPERIMENTS, IMPL_LOG, PLAN_FILE, SUBMISSION
from aiscientist.specialists.base import facts, role_system, run_facts
from aiscientist.workspace.guidance import Note, block

ORCHESTRATOR_SYSTEM = """ROLE: orchestrator
You are the Tier-0 orchestrator of AiScientist, an autonomous ML research engineer. You
keep stage-level control and delegate all real work to specialists, which you call as
tools; each call starts a fresh specialist that works in the workspace and returns a
short summary. You never edit code or run commands yourself; you may inspect the
workspace read-only (read_file, list_files, search_files).

Stages are guidance, not a fixed pipeline:
1. understand - comprehension (task, paper, code, evaluation protocol);
2. plan - prioritization (diverse hypotheses ranked by expected gain and feasibility);
3. research - alternate implementation and experimentation, driven by evidence: a failed
   run or missing metric calls for implementation(mode=fix) with the failure in its
   context; a regression calls for reverting or exploring a different idea; prefer
   breadth (different mechanisms and files) over refining one idea repeatedly. Re-plan
   when the plan is exhausted or evidence contradicts it.
Every experimentation call runs one counted step of a fixed budget. When the budget is
spent, or nothing promising is left, call submit(reason). The best validated step is
kept automatically (git tag `best`)."""

FLAT_SYSTEM = f"""ROLE: flat
You are AiScientist running as a single agent (no specialists): you have every tool
yourself - read, list, search, write and edit files, append to the logs, bash
(sandboxed, in {SUBMISSION}/) and run_experiment (one counted step of a fixed budget). Understand the task, change the
editable code under {SUBMISSION}/, run experiments, keep what improves the metric and
revert what does not. Call submit(reason) when the budget is spent or you are done."""

END_RULE = "The run ends when you call submit(reason)."
FINAL = "The step budget is spent: call submit(reason) now, summarising the best result."
NEXT = "Reply with your next tool call."
USUAL = {  # the stage's usual call, said last (small models follow what they read last)
    "understand": "comprehension",
    "plan": "prioritization",
    "research": "implementation, to make the plan's next change",
    "measure": "experimentation, to measure the change just made",
    "wrap-up": "experimentation of the last change, or submit",
}
START_FLAT = "Work on the task above with your tools."
NUDGE = "Call one of your tools (a specialist, an inspection tool, or submit)."


def orchestrator_messages(ctx: RunContext, state: OrchestratorState) -> list[dict[str, Any]]:
    """Stable first (the task, the system prompt, the bus rules, what dropped turns said), then the recent
    turns, then the status, which changes at every decision: a server's prefix cache reuses all before it."""
    system = role_system(ctx, ORCHESTRATOR_SYSTEM, END_RULE)
    stage = str(state.get("stage"))
    usual = USUAL.get("measure" if stage == "research" and state.get("since_exp") else stage)
    hint = f" At this stage it is usually {usual}." if usual else ""
    brief = f"{bus_rules_for_orchestrator(ctx)}\n{facts_line(**run_facts(ctx, 'orchestrator'))}"  # said once, cached
    earlier = earlier_block(state)
    brief = f"{brief}\n\n{earlier}" if earlier else brief
    return _conversation(system, brief, state, status_block(ctx, state), NEXT + hint)


def flat_messages(ctx: RunContext, state: OrchestratorState) -> list[dict[str, Any]]:
    notes = guidance_block(state)
    status = f"## Status\n{progress_line(ctx)}\n{best_line(ctx)}\n{notes}{facts(ctx, 'flat', guidance=_notes(state))}"
    return _conversation(role_system(ctx, FLAT_SYSTEM, END_RULE), START_FLAT, state, status)


def _conversation(
    system: str, brief: str, state: OrchestratorState, status: str, next_call: str = ""
) -> list[dict[str, Any]]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": brief}]
    for turn in state.get("turns", []):
        messages.extend(turn)
    last = FINAL if state.get("final_call") else next_call
    messages.append({"role": "user", "content": f"{status}\n\n{last}".strip()})
    return messages


def bus_rules_for_orchestrator(ctx: RunContext) -> str:
    if ctx.ws.file_bus:
        return (
            f"File-as-Bus is on: specialists share results through workspace files ({ANALYSIS}/, "
            f"{PLAN_FILE}, {EXP_LOG}, {IMPL_LOG}, {EXPERIMENTS}/). Point specialists "
            "to files rather than copying contents into their arguments."
        )
    return (
        "File-as-Bus is off: specialists cannot read each other's areas or the logs. Their full outputs "
        "come back to you; pass on what the next specialist needs in its `context` argument."
    )


def progress_line(ctx: RunContext) -> str:
    """The budgets used: steps, and the wall time, tokens and cost where the run limits them (an
    unlimited count told the model nothing, and changed every decision: uncached tokens)."""
    steps_done = ctx.steps_done()
    parts = [f"Steps used: {steps_done}/{ctx.steps} ({ctx.steps - steps_done} left)"]
    if ctx.wall_time_s:
        parts.append(f"time {100 * ctx.elapsed_s() / ctx.wall_time_s:.0f}% of {ctx.wall_time_s:.0f}s")
    limits = ctx.model_limits
    if limits.tokens or limits.cost_usd:
        tokens, cost = ctx.usage()
        parts += [f"tokens {tokens} of {limits.tokens}"] if limits.tokens else []
        parts += [f"cost ${cost:.4f} of ${limits.cost_usd:g}"] if limits.cost_usd else []
    return " · ".join(parts)


def best_line(ctx: RunContext) -> str:
    task = ctx.task
    best = ctx.best_step()
    base = f"baseline {task.baseline}" if task.baseline is not None else "baseline unknown"
    if best is None:
        return f"Best: none yet ({base})"
    return f"Best: {task.metric.label if task.metric else 'metric'} = {best.metric!r} at step {best.step} ({base})"


def status_block(ctx: RunContext, state: OrchestratorState) -> str:
    """What changed since the last decision, kept short: it is re-read uncached at every decision (the full
    workspace map and a counters line repeating FACTS cost the 1.5B model ~300 tokens, ~8 s, a decision)."""
    calls = state.get("calls", {})
    parts = [
        "## Status",
        f"Stage: {state.get('stage', 'understand')} · {progress_line(ctx)}",
        best_line(ctx),
    ]
    if state.get("last_outcome"):
        parts.append(f"Last call: {state['last_outcome']}")
    reminders = reminders_for(ctx, state)
    if reminders:
        parts += ["## Reminders", *(f"- {r}" for r in reminders)]
    if state.get("guidance"):
        parts.append(guidance_block(state).strip())
    parts += [
        ctx.ws.brief_map(),
        facts_line(  # what changes; the run's facts are in the brief (FACTS lines merge, later ones win)
            steps_done=ctx.steps_done(),
            counters={n: calls.get(n, 0) for n in (*COUNTED, "explore", "fix", "full")},
            guidance=_notes(state),
        ),
    ]
    return "\n".join(parts)


def earlier_block(state: OrchestratorState) -> str:
    """What the turns the window dropped said, newest last; it changes only when the window drops
    turns again, so it sits before the recent turns, in the cached part (at the status's end it
    changed with every decision: ~200 tokens the 1.5B model re-read each time)."""
    forgotten = state.get("forgotten") or []
    if not forgotten:
        return ""
    return "\n".join(
        [
            "## Earlier specialist summaries (their turns are no longer shown; newest last)",
            *(
                f"### decision {s['decision']}: {s['tool']} ({'ok' if s['ok'] else 'not ok'})\n{s['text']}"
                for s in forgotten
            ),
        ]
    )


def _notes(state: OrchestratorState) -> list[str] | None:
    return [n["text"] for n in state.get("guidance") or []] or None  # facts drop a None: no key without notes


def guidance_block(state: OrchestratorState) -> str:
    """The person's notes not acknowledged yet, quoted as guidance (with a newline after), or nothing."""
    notes = [Note(**n) for n in state.get("guidance") or []]
    return block(notes) + "\n" if notes else ""


def reminders_for(ctx: RunContext, state: OrchestratorState) -> list[str]:
    out = []
    used = ctx.steps_done() / ctx.steps
    for mark in (0.85, 0.7, 0.5):
        if used >= mark:
            out.append(
                f"{used:.0%} of the step budget is used"
                + ("; secure the best result and prepare to submit." if mark >= 0.85 else ".")
            )
            break
    if ctx.wall_time_s:
        share = ctx.elapsed_s() / ctx.wall_time_s
        if share >= 0.5:
            out.append(f"{share:.0%} of the wall-time budget is used.")
    since_impl = state.get("since_impl", 0)
    if since_impl == 1:  # the 1.5B orchestrator ran step 2's code again as step 3, told "usually implementation"
        out.append(
            "The code is as the last experiment ran it: another experiment now repeats it; make the next change."
        )
    elif since_impl > 1:
        out.append(f"{since_impl} experiments in a row without implementation: change the code before running again.")
    if state.get("since_exp", 0) >= 3:
        out.append(f"{state['since_exp']} implementation calls without an experiment: measure before changing more.")
    calls = state.get("calls", {})
    if calls.get("comprehension") and not calls.get("prioritization"):
        out.append("No plan yet: call prioritization before implementing.")
    if "failed" in state.get("last_outcome", "") and "experimentation" in state.get("last_outcome", ""):
        out.append("The last experiment failed: consider implementation(mode=fix) with the error as context.")
    return out
