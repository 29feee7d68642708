"""The one tool-calling loop of every agent: model call, tool calls, results, until a
terminal tool, a limit or a model failure. Agents differ only in their `LoopSpec`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from aiscientist.agent.memory import forget, trim
from aiscientist.agent.outcome import Outcome, StopReason, StopRun
from aiscientist.agent.tools import Toolbox
from aiscientist.llm import ContextOverflow, ModelError, ModelUnavailable
from aiscientist.llm.types import Completion, ToolCall

TERMINAL = {"finish": StopReason.FINISHED, "submit": StopReason.SUBMITTED}
ERROR_PREFIX = "Error"  # how Toolbox.call words a failed call
NOT_FINISHED = "not finished: a call before finish in this turn failed; see its result"
REPEAT_LIMIT = 4  # the same call with the same result this many times in one loop ends it

Complete = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Completion]
RunTool = Callable[[ToolCall, str], str]  # (call, position key) -> result text


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


def run_loop(
    complete: Complete, box: Toolbox, messages: list[dict[str, Any]], spec: LoopSpec, run_tool: RunTool | None = None
) -> Outcome:
    """`messages` (system prompt, task message) holds the trimmed conversation when the loop ends.
    ModelUnavailable and BudgetExhausted propagate; a conversation that outgrew the context
    window forgets its oldest turns and asks again (a turn of the limit, as PaperBench's
    agents count it); another ModelError ends the loop with `model_error`."""
    head, recent = messages[:2], messages[2:]
    repeats = _Repeats()
    try:
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
            ended = _answer(
                box, completion.tool_calls, recent, run_tool, f"{spec.key}{turn}", spec.finish_after_failure, repeats
            )
            if ended is not None:
                return ended.model_copy(update={"turns": turn + 1})
            if not completion.tool_calls and spec.nudge is None:
                return Outcome(
                    stop=StopReason.FINISHED, detail="the model answered without a tool call", turns=turn + 1
                )
            if spec.nudge is not None and (spec.nudge_every_turn or not completion.tool_calls):
                recent.append({"role": "user", "content": spec.nudge()})
            if spec.keep_messages:
                recent = trim(recent, spec.keep_messages)
        return Outcome(stop=StopReason.TURN_LIMIT, detail=f"stopped after {spec.max_turns} turns", turns=spec.max_turns)
    finally:
        messages[:] = head + recent


def _answer(
    box: Toolbox,
    calls: list[ToolCall],
    recent: list[dict[str, Any]],
    run_tool: RunTool | None,
    key: str,
    finish_after_failure: bool,
    repeats: _Repeats,
) -> Outcome | None:
    """Run one turn's tool calls; the outcome when the turn ends the loop (later calls are not run).
    Refusing a `finish` after a failed call keeps an agent that writes and finishes in one turn honest."""
    ended: Outcome | None = None
    failed = False
    for i, call in enumerate(calls):
        if ended is not None:
            content = "not run: the loop stopped"
        elif call.name == "finish" and failed and not finish_after_failure:
            content = NOT_FINISHED
        else:
            try:
                content = run_tool(call, f"{key}.{i}") if run_tool else box.call(call)[0]
                stop = None if content.startswith(ERROR_PREFIX) else terminal(box, call)
                if stop is not None:
                    ended = Outcome(
                        stop=stop, summary=str(call.arguments.get("summary", call.arguments.get("reason", ""))).strip()
                    )
            except StopRun as stop_run:
                content, ended = f"Error: {stop_run}", stop_run.outcome
            failed = failed or content.startswith(ERROR_PREFIX)
            content, stuck = repeats.note(call, content)
            ended = ended or stuck
        recent.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
    return ended


class _Repeats:
    """The same call with the same result again (a small model retrying a refused write ten
    times, re-reading one file ten times, or reading and rewriting one file with the same text
    in turn): from the second time the result says so; at REPEAT_LIMIT the loop ends."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str, str]] = Counter()

    def note(self, call: ToolCall, content: str) -> tuple[str, Outcome | None]:
        this = (call.name, json.dumps(call.arguments, sort_keys=True, default=str), content)
        self.seen[this] += 1
        count = self.seen[this]
        failed = "failed" if content.startswith(ERROR_PREFIX) else "given this same result"
        if count >= REPEAT_LIMIT:
            detail = f"the same {call.name} call {failed} {count} times: {content[:300]}"
            return content, Outcome(stop=StopReason.TURN_LIMIT, detail=detail)
        if count >= 2:
            content += (
                f"\n(This exact call has {failed} {count} times; making it again will not change "
                "that: change it or do something else.)"
            )
        return content, None


def call_model(
    client: Any, ws: Any, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> Completion:
    """One model call of any agent; tool calls rejected before they could run become events."""
    completion = client.complete(messages, tools, role=role)
    for call in completion.invalid_tool_calls:
        ws.events.record(role, "tool_call.rejected", {"tool": call.name, "id": call.id, "error": call.error})
    return completion


def terminal(box: Toolbox, call: ToolCall) -> StopReason | None:
    """The stop a valid call of a terminal tool of the box means (None: not one)."""
    tool = box.tools.get(call.name)
    if call.error is not None or call.name not in TERMINAL or tool is None:
        return None
    try:
        tool.args.model_validate(call.arguments)
    except ValidationError:
        return None
    return TERMINAL[call.name]
