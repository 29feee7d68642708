"""The orchestrator's thin state and the bounds that keep it thin.

Everything here is small and bounded: counters, the stage, the last few specialist
summaries (each clipped), and the last few decisions verbatim. The real project state
lives in the workspace; the prompt gets it through the workspace map.
"""

from __future__ import annotations

from typing import Any, TypedDict

from aiscientist.agent.outcome import StopReason
from aiscientist.config import RunConfig

COUNTED = ("comprehension", "prioritization", "implementation", "experimentation", "helper")


def stop(reason: StopReason, detail: str = "") -> dict[str, str]:
    """The state update that ends the run (the enum's value: checkpoints hold plain data)."""
    return {"stop_reason": reason.value, "stop_detail": detail}


class OrchestratorState(TypedDict, total=False):
    decision: int  # model decisions made so far
    stage: str
    summaries: list[dict[str, Any]]  # {"decision", "tool", "ok", "text", "call_id"}, newest last
    turns: list[list[dict[str, Any]]]  # recent decisions: [assistant message, tool results...]
    forgotten: list[dict[str, Any]]  # summaries of the turns the window last dropped; fixed until it drops again
    pending: dict[str, Any] | None  # assistant message whose tool calls await execution
    pending_calls: list[dict[str, Any]]  # its parsed tool calls (ToolCall dumps)
    to_act: bool  # the last decision's calls (or its nudge after a model error) have not run yet
    calls: dict[str, int]  # per tool, plus implementation modes (full/fix/explore)
    since_impl: int  # experimentation calls since the last implementation
    since_exp: int  # implementation calls since the last experimentation
    last_outcome: str
    model_errors: int
    no_tool_calls: int  # decisions in a row whose reply called no tool (not even an invalid call)
    final_call: bool  # the step budget is spent: this decision may only submit
    stop_reason: str  # a StopReason value; set: the run ends
    stop_detail: str  # the same for people
    guidance: list[dict[str, Any]]  # the person's unacknowledged notes (a decision's view; kept in the event log)


def initial_state() -> OrchestratorState:
    return OrchestratorState(
        decision=0,
        stage="understand",
        summaries=[],
        turns=[],
        forgotten=[],
        pending=None,
        pending_calls=[],
        to_act=False,
        calls={name: 0 for name in COUNTED},
        since_impl=0,
        since_exp=0,
        last_outcome="",
        model_errors=0,
        final_call=False,
        stop_reason="",
        stop_detail="",
    )


def stage_of(calls: dict[str, int], steps_done: int, steps: int) -> str:
    if not calls.get("comprehension"):
        return "understand"
    if not calls.get("prioritization"):
        return "plan"
    if steps_done >= steps:
        return "submit"
    return "wrap-up" if steps_done >= 0.85 * steps else "research"


def bound_summaries(summaries: list[dict[str, Any]], config: RunConfig) -> list[dict[str, Any]]:
    return summaries[-config.orchestrator.summaries_kept :]


def forgotten_summaries(summaries: list[dict[str, Any]], kept: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The summaries whose calls the kept turns no longer show (each summary's `call_id`)."""
    shown = {m.get("tool_call_id") for turn in kept for m in turn if m.get("role") == "tool"}
    return [s for s in summaries if s.get("call_id") not in shown]
