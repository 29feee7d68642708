"""The one turn handler: how every agent's tool calls of one model turn are answered (the
kernel's loop and the orchestrator's graph alike). Each call gets exactly one answer, in
order: a refusal, its result (through `run_tool`: the journal replays effects on resume),
or NOT_RUN once an earlier call of the turn ended the loop. A valid call of a terminal tool,
a StopRun raised by a tool, or the same call with the same result REPEAT_LIMIT times ends it; a
loop that must not end so (the orchestrator's: its end is the run's) refuses that call from then on.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from aiscientist.agent.outcome import Outcome, StopReason, StopRun
from aiscientist.agent.tools import Toolbox
from aiscientist.llm.types import ToolCall

TERMINAL = {"finish": StopReason.FINISHED, "submit": StopReason.SUBMITTED}
ERROR_PREFIX = "Error"  # how Toolbox.call words a failed call
NOT_RUN = "not run: an earlier call of this turn ended the loop"
NOT_FINISHED = "not finished: a call before finish in this turn failed; see its result"
REPEAT_LIMIT = 4  # the same call with the same result this many times in one loop ends it
STUCK = (
    "Error: not run: this exact {name} call was given the same result {limit} times. Do something else: "
    "another call, or these arguments changed."
)

RunTool = Callable[[ToolCall, str], str]  # (call, position key) -> result text
Refuse = Callable[[ToolCall, bool], str | None]  # (call, an earlier call of the turn failed) -> refusal or None


class TurnHandler:
    """Answers the turns of one loop over `box`; it remembers every call and result it gave,
    for the repeat rule (a new handler, e.g. a resumed run's, counts afresh)."""

    def __init__(self, box: Toolbox, end_on_repeat: bool = True) -> None:
        self.box = box
        self.end_on_repeat = end_on_repeat
        self.seen: Counter[tuple[str, str, str]] = Counter()
        self.stuck: set[tuple[str, str]] = set()  # calls refused unrun (end_on_repeat off), each REPEAT_LIMIT times

    def answer(
        self, calls: list[ToolCall], prefix: str, run_tool: RunTool | None = None, refuse: Refuse | None = None
    ) -> tuple[list[dict[str, Any]], Outcome | None]:
        """(one tool message per call, the outcome when the turn ends the loop). Call i runs at
        journal position `{prefix}{i}`; `run_tool` defaults to the box's own dispatch; a refusal
        is not run and not counted as a repeat."""
        run = run_tool or (lambda call, _key: self.box.call(call)[0])
        answers: list[dict[str, Any]] = []
        ended: Outcome | None = None
        failed = False
        for i, call in enumerate(calls):
            refusal = refuse(call, failed) if refuse and ended is None else None
            if refusal is None and _key(call) in self.stuck:
                refusal = STUCK.format(name=call.name, limit=REPEAT_LIMIT)
            if ended is not None:
                content = NOT_RUN
            elif refusal is not None:
                content = refusal
            else:
                content, ended = self._run(run, call, f"{prefix}{i}")
                failed = failed or content.startswith(ERROR_PREFIX)
                content, stuck = self._repeat(call, content)
                ended = ended or stuck
            answers.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
        return answers, ended

    def _run(self, run: RunTool, call: ToolCall, key: str) -> tuple[str, Outcome | None]:
        try:
            content = run(call, key)
        except StopRun as stop_run:
            return f"Error: {stop_run}", stop_run.outcome
        stop = None if content.startswith(ERROR_PREFIX) else terminal(self.box, call)
        if stop is None:
            return content, None
        summary = str(call.arguments.get("summary", call.arguments.get("reason", ""))).strip()
        return content, Outcome(stop=stop, summary=summary)

    def _repeat(self, call: ToolCall, content: str) -> tuple[str, Outcome | None]:
        """The same call with the same result again (a small model retrying a refused write ten
        times, re-reading one file ten times, or reading and rewriting one file with the same text
        in turn): from the second time the result says so; at REPEAT_LIMIT the loop ends (with
        `end_on_repeat` off, the call is refused unrun from then on)."""
        this = (*_key(call), content)
        self.seen[this] += 1
        count = self.seen[this]
        failed = "failed" if content.startswith(ERROR_PREFIX) else "given this same result"
        if count >= REPEAT_LIMIT and not self.end_on_repeat:
            self.stuck.add(_key(call))
            said = f"(This exact call has {failed} {count} times: it is not run again; do something else.)"
            return f"{content}\n{said}", None
        if count >= REPEAT_LIMIT:
            detail = f"the same {call.name} call {failed} {count} times: {content[:300]}"
            return content, Outcome(stop=StopReason.TURN_LIMIT, detail=detail)
        if count >= 2:
            content += (
                f"\n(This exact call has {failed} {count} times; making it again will not change "
                "that: change it or do something else.)"
            )
        return content, None


def _key(call: ToolCall) -> tuple[str, str]:
    return call.name, json.dumps(call.arguments, sort_keys=True, default=str)


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


def finish_only_after_success(call: ToolCall, failed: bool) -> str | None:
    """A `finish` after a failed call of the same turn is refused: it keeps an agent that
    writes and finishes in one turn honest."""
    return NOT_FINISHED if call.name == "finish" and failed else None
