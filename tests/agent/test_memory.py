"""Conversation memory (aiscientist/agent/memory.py): every rule cuts at a turn's start, so no
tool result loses its call; forgetting keeps the newest turns within the window's share; old
results shrink once the agent has acted on them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiscientist.agent.memory import (
    ACTED_KEEP_CHARS,
    ACTED_MARK,
    FORGET_TO,
    bound_turns,
    forget,
    forget_oldest,
    settled,
    trim,
    turn_chars,
    turns_of,
)
from aiscientist.llm.types import ContextOverflow
from aiscientist.util import notices

EFFECTS = {"edit_file", "write_file"}


def _turn(i: int, name: str, result: str) -> list[dict]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": result},
    ]


def _calls_answered(messages: list[dict]) -> bool:
    calls = {c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]}
    return {m["tool_call_id"] for m in messages if m["role"] == "tool"} <= calls


@given(sizes=st.lists(st.integers(0, 5000), max_size=30), size=st.integers(1, 300_000), limit=st.integers(1, 300_000))
def test_forgetting_keeps_a_shorter_suffix_within_the_share(sizes, size, limit):
    turns = [[{"role": "tool", "content": "x" * n}] for n in sizes]
    kept = forget_oldest(turns, size, limit)
    assert kept == turns[len(turns) - len(kept) :]  # the newest turns, in order
    assert len(kept) < len(turns) or not turns  # at least the oldest is forgotten
    if len(kept) < len(turns) - 1:  # forgot more than the oldest: what is left fits the share
        assert sum(len(t[0]["content"]) for t in kept) <= FORGET_TO * limit / size * sum(sizes)


def test_trimming_and_forgetting_cut_at_a_turn_start() -> None:
    messages = [m for i in range(6) for m in _turn(i, "read_file", "r" * 100)]
    messages.insert(4, {"role": "user", "content": "take the next step"})  # a nudge inside turn 1
    assert [len(t) for t in turns_of(messages)] == [2, 3, 2, 2, 2, 2]
    for keep in range(1, len(messages) + 2):
        kept = trim(messages, keep)
        assert len(kept) <= keep and kept == messages[len(messages) - len(kept) :]
        assert not kept or kept[0]["role"] == "assistant" or kept == messages
        assert _calls_answered(kept)
    told: list[str] = []
    with notices.listening(lambda kind, text: told.append(text)):
        left = forget(messages, ContextOverflow("too large", limit=1000, size=2000))
    assert left[0]["role"] == "assistant" and left == messages[len(messages) - len(left) :] and _calls_answered(left)
    assert len(left) < len(messages) and told == [
        f"the conversation outgrew the model's context window: the {6 - len(turns_of(left))} oldest turns are "
        f"forgotten, {len(turns_of(left))} kept"
    ]


def test_bound_turns_keeps_a_growing_window_or_a_character_cap() -> None:
    turns = [_turn(i, "read_file", "r" * 100) for i in range(7)]
    assert bound_turns(turns[:4], 2) == turns[:4] and bound_turns(turns[:5], 2) == turns[3:5]  # grows to 4, drops to 2
    assert bound_turns(turns[:6], 2, growth=3) == turns[:6] and bound_turns(turns, 2, growth=3) == turns[-2:]
    assert bound_turns(turns[:3], 2, growth=1) == turns[1:3]  # a window sliding by one turn
    for growth in (1, 2, 3):
        window: list = []
        drops = 0
        for turn in turns * 2:  # each decision's window extends the one before but at a drop: a prefix cache reuses it
            before, window = window, bound_turns([*window, turn], 2, growth=growth)
            assert window[: len(before)] == before or window == [before[-1], turn]
            drops += window[: len(before)] != before
        assert drops == (14 - 2 * growth - 1) // (2 * growth - 1) + 1  # one drop per 2 * growth - 1 decisions
    width = turn_chars(turns[0])
    assert bound_turns(turns, 2, cap=3 * width) == turns[-3:] and bound_turns(turns, 2, cap=3 * width - 1) == turns[-2:]
    assert bound_turns(turns, 2, cap=10) == turns[-1:]  # the newest turn is kept even beyond the cap
    assert bound_turns(turns, 2, cap=10**6) == turns
    assert bound_turns(turns, 2, cap=10**6, growth=1) == turns  # a cap, not the window, bounds a growing conversation


def test_results_before_the_latest_change_shrink_and_the_rest_stay_whole() -> None:
    plan, code, edited, more = "plan " * 200, "code " * 200, "edited a.py", "more " * 200
    head = [{"role": "system", "content": "ROLE: implementation"}, {"role": "user", "content": "task " * 200}]
    reading = head + _turn(0, "read_file", plan) + _turn(1, "read_file", code)
    assert settled(reading, EFFECTS.__contains__) == reading  # nothing acted on yet
    acted = reading + _turn(2, "edit_file", edited) + _turn(3, "read_file", more)
    sent = settled(acted, EFFECTS.__contains__)
    assert [m.get("content") for m in sent if m["role"] == "tool"] == [
        plan[:ACTED_KEEP_CHARS] + ACTED_MARK,
        code[:ACTED_KEEP_CHARS] + ACTED_MARK,
        edited,
        more,
    ]
    assert [m for m in sent if m["role"] != "tool"] == [
        m for m in acted if m["role"] != "tool"
    ]  # instructions and the agent's own messages whole
    assert acted[3]["content"] == plan  # the loop's own conversation is not changed
