"""The kernel's tool-calling loop (specialists and bench baselines): model call, tool calls,
results, until a terminal tool, a limit or a model failure. Agents differ only in their
`LoopSpec`; each turn's calls are answered by `agent.turn.TurnHandler`, as the orchestrator's are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiscientist.agent.memory import forget, trim
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.tools import Toolbox
from aiscientist.agent.turn import ERROR_PREFIX, Refuse, RunTool, TurnHandler, finish_only_after_success
from aiscientist.llm import ContextOverflow, ModelError, ModelUnavailable
from aiscientist.llm.messages import assistant_message
from aiscientist.llm.types import Completion, RawToolCall, ToolCall

CHANGES = ("write_file", "edit_file")  # the tools whose success changes a file the role works on
Complete = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Completion]


@dataclass
class LoopSpec:
    max_turns: int
    nudge: Callable[[], str] | None = None  # continue message; None: a reply without a tool call ends the loop
    nudge_every_turn: bool = False  # PaperBench IterativeAgent: "take the next step" after every turn
    keep_messages: int | None = None  # keep the first two messages and this many recent ones
    should_stop: Callable[[], Outcome | None] | None = None  # checked before every model call
    key: str = "t"  # journal position prefix of the calls
    finish_after_failure: bool = True  # False: a `finish` after a failed call of the same turn is refused
    prose_finish_chars: int | None = None  # a reply without a call this long is the summary (a reader's notes)
    after_change: str | None = None  # said after a turn whose write or edit succeeded (the 1.5B model then wrote logs)
    # made for the model before its first turn, as if it had made it (experimentation's run: its first move is always
    # the run it was asked for; the model's own call of it cost the 1.5B model a call, ~10 s, every step)
    opening: ToolCall | None = None


def run_loop(
    complete: Complete, box: Toolbox, messages: list[dict[str, Any]], spec: LoopSpec, run_tool: RunTool | None = None
) -> Outcome:
    """`messages` (system prompt, task message) holds the trimmed conversation when the loop ends.
    ModelUnavailable and BudgetExhausted propagate; a conversation that outgrew the context
    window forgets its oldest turns and asks again (a turn of the limit, as PaperBench's
    agents count it); another ModelError ends the loop with `model_error`."""
    head, recent = messages[:2], messages[2:]
    turns = TurnHandler(box)
    refuse = None if spec.finish_after_failure else finish_only_after_success
    try:
        if spec.opening is not None:
            opened, ended = _open(spec.opening, turns, f"{spec.key}open.", run_tool, refuse)
            recent += opened
            if ended is not None:
                return ended.model_copy(update={"turns": 0})
        for turn in range(spec.max_turns):
            stop = spec.should_stop() if spec.should_stop else None
            if stop is not None:
                return stop.model_copy(update={"turns": turn})
            try:
                completion = complete(head + recent, box.schemas())
            except ModelUnavailable:
                raise
            except ContextOverflow as err:
                if not recent:
                    return Outcome(stop=StopReason.MODEL_ERROR, detail=str(err)[:600], turns=turn)
                recent = forget(recent, err)
                continue
            except ModelError as err:
                return Outcome(stop=StopReason.MODEL_ERROR, detail=str(err)[:600], turns=turn)
            recent.append(completion.message)
            prose = completion.content.strip()
            if not completion.tool_calls and spec.prose_finish_chars and len(prose) >= spec.prose_finish_chars:
                return Outcome(stop=StopReason.FINISHED, summary=prose, detail="answered in prose", turns=turn + 1)
            answers, ended = turns.answer(completion.tool_calls, f"{spec.key}{turn}.", run_tool, refuse)
            recent += answers
            if ended is not None:
                return ended.model_copy(update={"turns": turn + 1})
            if not completion.tool_calls and spec.nudge is None:
                return Outcome(
                    stop=StopReason.FINISHED, detail="the model answered without a tool call", turns=turn + 1
                )
            if spec.nudge is not None and (spec.nudge_every_turn or not completion.tool_calls):
                recent.append({"role": "user", "content": spec.nudge()})
            elif spec.after_change and _changed(completion.tool_calls, answers):
                recent.append({"role": "user", "content": spec.after_change})
            if spec.keep_messages:
                recent = trim(recent, spec.keep_messages)
        return Outcome(stop=StopReason.TURN_LIMIT, detail=f"stopped after {spec.max_turns} turns", turns=spec.max_turns)
    finally:
        messages[:] = head + recent


def _open(
    call: ToolCall, turns: TurnHandler, prefix: str, run_tool: RunTool | None, refuse: Refuse | None
) -> tuple[list[dict[str, Any]], Outcome | None]:
    """The opening call as the conversation keeps a model's call, and its answer (journaled like any call)."""
    raw = RawToolCall(id=call.id, name=call.name, arguments=json.dumps(call.arguments))
    answers, ended = turns.answer([call], prefix, run_tool, refuse)
    return [assistant_message("", [raw]), *answers], ended


def _changed(calls: list[ToolCall], answers: list[dict[str, Any]]) -> bool:
    """Whether a write or edit of the turn succeeded."""
    return any(c.name in CHANGES and not a["content"].startswith(ERROR_PREFIX) for c, a in zip(calls, answers))


def call_model(
    client: Any, ws: Any, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> Completion:
    """One model call of any agent; tool calls rejected before they could run become events."""
    completion = client.complete(messages, tools, role=role)
    for call in completion.invalid_tool_calls:
        ws.events.record(role, "tool_call.rejected", {"tool": call.name, "id": call.id, "error": call.error})
    return completion
