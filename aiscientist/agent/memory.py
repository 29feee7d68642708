"""Conversation memory: what an agent's conversation keeps of its past, in one place.

A turn is an assistant message and what follows it (its tool results, a nudge); every
rule here cuts at a turn's start, so no tool result loses its call. The rules:
- `trim`: the last N messages (a baseline with a fixed window, e.g. PaperBench's Basic agent);
- `forget`/`forget_turns`/`forget_oldest`: after a ContextOverflow, the oldest turns go, down to
  about FORGET_TO of the window, the instructions stay, and the agent asks again - as
  PaperBench's Basic and Iterative agents prune their oldest messages and continue;
- `settled`: tool results older than the agent's latest effect shrink to their head (specialists);
- `bound_turns`: the orchestrator's recent turns, by count (thin control) or by characters
  (a conversation that carries the results itself).
Fitting one request to the window (clipping tool results, before sending) is `llm.window`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiscientist.llm.types import ContextOverflow
from aiscientist.util import notices

Message = dict[str, Any]
Turn = list[Message]

FORGET_TO = 0.75  # a conversation that overflowed is cut to this share of the window
ACTED_KEEP_CHARS = 200
ACTED_MARK = "\n[... clipped: you have acted since this result; call the tool again if you need it whole]"


def turns_of(messages: list[Message]) -> list[Turn]:
    """`messages` cut at each assistant message (what comes before the first one is a turn too)."""
    turns: list[Turn] = []
    for message in messages:
        if message.get("role") == "assistant" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def trim(messages: list[Message], keep: int) -> list[Message]:
    """The last `keep` messages, starting at an assistant message (no tool result without its call)."""
    if len(messages) <= keep:
        return messages
    cut = len(messages) - keep
    while cut < len(messages) and messages[cut].get("role") != "assistant":
        cut += 1
    return messages[cut:]


def forget(messages: list[Message], err: ContextOverflow) -> list[Message]:
    """`messages` without their oldest turns, by the rule of `forget_oldest`."""
    return [message for turn in forget_turns(turns_of(messages), err) for message in turn]


def forget_turns(turns: list[Turn], err: ContextOverflow) -> list[Turn]:
    """`forget_oldest`, told to the person watching."""
    kept = forget_oldest(turns, err.size, err.limit)
    notices.notify(
        "context",
        f"the conversation outgrew the model's context window: the {len(turns) - len(kept)} oldest turns are "
        f"forgotten, {len(kept)} kept",
    )
    return kept


def forget_oldest(turns: list[Turn], size: int | None, limit: int | None) -> list[Turn]:
    """The newest turns within the share of the turns' characters that would bring a
    request of `size` tokens to FORGET_TO of the window `limit` (half of them when the
    sizes are not known); at least the oldest turn is forgotten."""
    share = FORGET_TO * limit / size if size and limit else 0.5
    kept = newest_within(turns, int(share * sum(map(turn_chars, turns))), keep_newest=False)
    return kept if len(kept) < len(turns) else turns[1:]


def newest_within(turns: list[Turn], cap: int, keep_newest: bool = True) -> list[Turn]:
    """The newest turns whose characters add up to at most `cap` (and the newest one
    even beyond it when `keep_newest`)."""
    total, kept = 0, []
    for turn in reversed(turns):
        total += turn_chars(turn)
        if total > cap and (kept or not keep_newest):
            break
        kept.append(turn)
    return list(reversed(kept))


def turn_chars(turn: Turn) -> int:
    return sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in turn)


def bound_turns(turns: list[Turn], keep: int, cap: int | None = None, growth: int = 2) -> list[Turn]:
    """The recent turns (thin control): at least the last `keep`; the window grows to `growth` times that and
    then drops back, so between drops each prompt extends the one before and a server's prefix cache reuses it
    (a window sliding by one turn changed every prompt right after its brief: the 1.5B model re-read ~900 tokens
    per decision). A larger `growth` drops less often and sends more (cached) tokens per decision: on the tiny
    task's 3 steps, 3 instead of 2 raised the cached share 68 -> 71 % and the prompt tokens per step 10.5k -> 13.0k
    (docs/results-full-arm.md, runs 13-14). With `cap`, when the conversation
    is the only carrier of results (File-as-Bus off, flat agent), as many as fit `cap` characters."""
    if cap is not None:
        return newest_within(turns, cap)
    return turns if len(turns) <= growth * keep else turns[-keep:]


def settled(messages: list[Message], is_effect: Callable[[str], bool]) -> list[Message]:
    """The conversation as sent next: tool results older than the agent's latest effect (write, edit,
    log, experiment) shrink to their head. It has acted on them; the files hold the current truth."""
    acted = -1
    for i, m in enumerate(messages):
        if any(is_effect(c["function"]["name"]) for c in m.get("tool_calls") or []):
            acted = i
    out = []
    for i, m in enumerate(messages):
        content = m.get("content")
        long = isinstance(content, str) and len(content) > ACTED_KEEP_CHARS + len(ACTED_MARK)
        if i < acted and m.get("role") == "tool" and long:
            m = {**m, "content": content[:ACTED_KEEP_CHARS] + ACTED_MARK}
        out.append(m)
    return out
