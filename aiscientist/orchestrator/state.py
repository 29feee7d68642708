"""The orchestrator's thin state and the bounds that keep it thin.

Everything here is small and bounded: counters, the stage, the last few specialist
summaries (each clipped), and the last few decisions verbatim. The real project state
lives in the workspace; the prompt gets it through the workspace map.
"""

from __future__ import annotations

from typing import Any, TypedDict

from aiscientist.agent.outcome import StopReason
from aiscientist.config import RunConfig

FIT_TARGET = 0.75  # a conversation that overflowed the context window is cut to this share of it
COUNTED = ("comprehension", "prioritization", "implementation", "experimentation", "helper")


def stop(reason: StopReason, detail: str = "") -> dict[str, str]:
    """The state update that ends the run (the enum's value: checkpoints hold plain data)."""
    return {"stop_reason": reason.value, "stop_detail": detail}


class OrchestratorState(TypedDict, total=False):
    decision: int  # model decisions made so far
    stage: str
    summaries: list[dict[str, Any]]  # {"decision", "tool", "ok", "text", "call_id"}, newest last
    turns: list[list[dict[str, Any]]]  # recent decisions: [assistant message, tool results...]
    pending: dict[str, Any] | None  # assistant message whose tool calls await execution
    pending_calls: list[dict[str, Any]]  # its parsed tool calls (ToolCall dumps)
    to_act: bool  # the last decision's calls (or its nudge after a model error) have not run yet
    calls: dict[str, int]  # per tool, plus implementation modes (full/fix/explore)
    since_impl: int  # experimentation calls since the last implementation
    since_exp: int  # implementation calls since the last experimentation
    last_outcome: str
    model_errors: int
    final_call: bool  # the step budget is spent: this decision may only submit
    stop_reason: str  # a StopReason value; set: the run ends
    stop_detail: str  # the same for people


def initial_state() -> OrchestratorState:
    return OrchestratorState(
        decision=0, stage="understand", summaries=[], turns=[], pending=None, pending_calls=[], to_act=False,
        calls={name: 0 for name in COUNTED}, since_impl=0, since_exp=0, last_outcome="", model_errors=0,
        final_call=False, stop_reason="", stop_detail="",
    )


def stage_of(calls: dict[str, int], steps_done: int, steps: int) -> str:
    if not calls.get("comprehension"):
        return "understand"
    if not calls.get("prioritization"):
        return "plan"
    if steps_done >= steps:
        return "submit"
    return "wrap-up" if steps_done >= 0.85 * steps else "research"


def bound_turns(turns: list[list[dict[str, Any]]], config: RunConfig, grows: bool) -> list[list[dict[str, Any]]]:
    """Recent turns: the last `recent_turns` (thin control), or, when the conversation is
    the only carrier of results (File-as-Bus off, flat agent), as many as fit the cap."""
    if not grows:
        return turns[-config.orchestrator.recent_turns :]
    return _newest_within(turns, config.orchestrator.no_bus_context_chars)


def forget_to_fit(turns: list[list[dict[str, Any]]], size: int | None, limit: int | None) -> list[list[dict[str, Any]]]:
    """A growing conversation that overflowed the context window (`size` tokens against
    `limit`) forgets its oldest turns: it keeps the newest ones within the share of the
    turns' characters that would bring the request to FIT_TARGET of the window (half
    when the sizes are not known), and always forgets at least the oldest turn."""
    share = FIT_TARGET * limit / size if size and limit else 0.5
    kept = _newest_within(turns, int(share * sum(map(_chars, turns))), keep_newest=False)
    return kept if len(kept) < len(turns) else turns[1:]


def _newest_within(turns: list[list[dict[str, Any]]], cap: int, keep_newest: bool = True) -> list[list[dict[str, Any]]]:
    """The newest turns whose characters add up to at most `cap` (and the newest one
    even beyond it when `keep_newest`)."""
    total, kept = 0, []
    for turn in reversed(turns):
        total += _chars(turn)
        if total > cap and (kept or not keep_newest):
            break
        kept.append(turn)
    return list(reversed(kept))


def _chars(turn: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in turn)


def bound_summaries(summaries: list[dict[str, Any]], config: RunConfig) -> list[dict[str, Any]]:
    return summaries[-config.orchestrator.summaries_kept :]
