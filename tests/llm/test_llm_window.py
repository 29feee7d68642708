"""Counting requests and fitting them to the context window (aiscientist/llm/tokens.py,
aiscientist/llm/window.py): counts equal litellm's counter, the trimming rule on
constructed requests, and a request that cannot fit is refused before it is sent."""

from __future__ import annotations

import json
from pathlib import Path

import litellm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiscientist.llm import ContextOverflow, LLMConfig, make_client, read_records, tokens
from aiscientist.llm.tokens import TokenCounter
from aiscientist.llm.window import (
    DEFAULT_CONTEXT_WINDOW,
    TRIM_KEEP_CHARS,
    TRIM_MARK,
    context_window,
    fit,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "a path"},
                    "max_lines": {"type": "integer", "default": 200},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "Finish.",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
        },
    },
]


def _code(tag: str, lines: int) -> str:
    return "".join(f"def {tag}_{i}(x):\n    return x * {i} + {len(tag)}  # step {i}\n" for i in range(lines))


def _conversation(results: list[str]) -> list[dict]:
    messages = [
        {"role": "system", "content": "ROLE: implementation\nChange the code."},
        {"role": "user", "content": "Task: make it faster. Editable files: a.py"},
    ]
    for i, text in enumerate(results):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{i}.py"})},
        }
        messages += [
            {"role": "assistant", "content": f"Reading file {i}.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": text},
        ]
    return messages


@pytest.mark.parametrize("model", ["", "gpt-4o", "gpt-3.5-turbo-0301"])
@pytest.mark.parametrize("system", [True, False])
def test_counts_equal_litellms_counter(model: str, system: bool) -> None:
    messages = _conversation([_code("a", 30), "Error: no such file", "ünïcödé ✓ " * 20]) + [
        {"role": "user", "content": "Now finish."}
    ]
    messages = messages if system else messages[1:]
    counter = TokenCounter(model)
    for tools in (TOOLS, []):
        assert counter.request(messages, tools) == litellm.token_counter(
            model=model, messages=messages, tools=tools or None
        )
    assert counter.request(messages[:1], TOOLS) == litellm.token_counter(
        model=model, messages=messages[:1], tools=TOOLS
    )


def test_a_growing_conversation_counts_only_its_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    real, texts = litellm.token_counter, []

    def counting(**kwargs):
        texts.extend(m.get("content") or "" for m in kwargs.get("messages") or [])
        texts.append(kwargs.get("text") or "")
        return real(**kwargs)

    monkeypatch.setattr(litellm, "token_counter", counting)
    monkeypatch.setattr(tokens, "_count_text", lambda model, text: counting(model=model, text=text))
    counter = TokenCounter("")
    messages = _conversation([_code("grow", 40)])
    first = counter.request(messages, TOOLS)
    messages += [{"role": "user", "content": "one more line, new this turn"}]
    texts.clear()
    assert counter.request(messages, TOOLS) == real(model="", messages=messages, tools=TOOLS) > first
    assert [t for t in texts if t] == ["one more line, new this turn"]  # the rest came from the cache


@settings(max_examples=30, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=4000), min_size=1, max_size=4),
    model=st.sampled_from(["", "gpt-4o"]),
)
def test_counts_equal_litellms_counter_for_any_text(texts: list[str], model: str) -> None:
    messages = [
        {
            "role": ("user", "assistant", "tool")[i % 3],
            "content": text,
            **({"tool_call_id": f"c{i}"} if i % 3 == 2 else {}),
        }
        for i, text in enumerate(texts)
    ]
    assert TokenCounter(model).request(messages, []) == litellm.token_counter(model=model, messages=messages)


def test_a_prompt_that_changes_only_towards_its_end_recounts_only_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    real, counted = litellm.token_counter, []

    def counting(**kwargs):
        counted.append(kwargs.get("text") or "".join(m.get("content") or "" for m in kwargs.get("messages") or []))
        return real(**kwargs)

    monkeypatch.setattr(litellm, "token_counter", counting)
    monkeypatch.setattr(tokens, "_count_text", lambda model, text: counting(model=model, text=text))
    counter, stable = TokenCounter(""), _code("stable", 200)  # many pieces of litellm's length
    first = [{"role": "user", "content": stable + "Status: step 1 of 9"}]
    second = [{"role": "user", "content": stable + "Status: step 2 of 9"}]
    counter.request(first, [])
    counted.clear()
    assert counter.request(second, []) == real(model="", messages=second)
    assert sum(len(text) for text in counted) < 2 * 1024 < len(stable)  # the last piece, not the stable start


def test_the_rule_clips_the_oldest_tool_results_until_the_request_fits() -> None:
    counter = TokenCounter("")
    old, middle, new = _code("old", 60), _code("middle", 60), _code("new", 60)
    messages = _conversation([old, middle, new])
    full = counter.request(messages, TOOLS)
    budget = full - counter.message(messages[3]) // 2  # clipping the oldest result is enough
    fitted = fit(counter, messages, TOOLS, budget)
    assert fitted.clipped == 1 and fitted.size <= budget
    assert fitted.size == litellm.token_counter(model="", messages=fitted.messages, tools=TOOLS)
    assert fitted.messages[3]["content"] == old[:TRIM_KEEP_CHARS] + TRIM_MARK
    assert [m["content"] for m in fitted.messages[4:]] == [m["content"] for m in messages[4:]]  # newer results whole
    assert fitted.messages[:3] == messages[:3] and messages[3]["content"] == old  # the caller's list is untouched
    tighter = fit(counter, messages, TOOLS, budget - counter.message(messages[5]) // 2)
    assert tighter.clipped == 2 and tighter.messages[7]["content"] == new
    assert fit(counter, messages, TOOLS, full).messages is messages  # fits: nothing changes


def _script(tmp_path: Path, replies: list) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies))
    return f"scripted:{path}"


def test_a_request_over_the_window_is_trimmed_before_it_is_sent(tmp_path: Path) -> None:
    model = _script(tmp_path, ["done"])
    messages = _conversation([_code("old", 60), _code("new", 60)])
    size = TokenCounter("").request(messages, TOOLS)
    window = size - 300
    client = make_client(
        model, tmp_path / "run", config=LLMConfig(model=model, context_window=window, record_dir=tmp_path / "rec")
    )
    assert client.complete(messages, TOOLS).content == "done"
    [record] = read_records(tmp_path / "run" / "logs" / "llm_calls.jsonl")
    assert (record["outcome"], record["trimmed"], record["clipped"]) == ("ok", True, 1)
    assert record["prompt_tokens"] <= window
    [sent] = [json.loads(p.read_text())["request"]["messages"] for p in (tmp_path / "rec").glob("*.json")]
    assert sent[3]["content"].endswith(TRIM_MARK) and sent[5]["content"] == messages[5]["content"]


def test_a_request_that_cannot_fit_is_a_clear_error_and_is_not_sent(tmp_path: Path) -> None:
    model = _script(tmp_path, ["never sent"])
    messages = _conversation([_code("only", 60)])
    client = make_client(model, tmp_path / "run", config=LLMConfig(model=model, context_window=100))
    with pytest.raises(ContextOverflow) as info:
        client.complete(messages, TOOLS)
    size = info.value.size
    assert (
        info.value.limit == 100
        and size == TokenCounter("").request(fit(TokenCounter(""), messages, TOOLS, 100).messages, TOOLS) > 100
    )
    assert str(info.value).startswith(
        f"{model}: the request does not fit the context window: {size} tokens after clipping 1 old tool "
        "result(s), the model's limit is 100 tokens (not sent"
    )
    [record] = read_records(tmp_path / "run" / "logs" / "llm_calls.jsonl")
    assert (record["outcome"], record["kind"], record["sent"], record["prompt_tokens"]) == (
        "error",
        "context_overflow",
        False,
        0,
    )
    assert client.complete(messages[:2]).content == "never sent"  # the script was not consumed: nothing had been sent


def test_the_window_comes_from_the_models_file_then_litellm_then_the_offline_default() -> None:
    assert context_window("gpt-4o", 5000, offline=False) == 5000
    assert context_window("gpt-4o", None, offline=False) == litellm.get_model_info("gpt-4o")["max_input_tokens"]
    assert context_window("offline", None, offline=True) == DEFAULT_CONTEXT_WINDOW
    assert context_window("openai/a-model-litellm-does-not-know", None, offline=False) is None
    assert make_client("offline").window == DEFAULT_CONTEXT_WINDOW
