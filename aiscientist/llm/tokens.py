"""Token counts of requests exactly as litellm's counter gives them, cached by content.

`litellm.token_counter(model, messages=M, tools=T)` is a sum: each message's own
tokens, a fixed reply primer, and the tool definitions (their count depends only on
whether M has a system message). An agent resends the same messages and the same tool
schemas on every turn, so each part is counted once, keyed by its content, and a
request costs the tokenizer only its new messages. With tiktoken, litellm counts a
text as the sum of its pieces of a fixed length; a long message's text is counted
the same way, each piece cached, so a prompt that repeats an earlier one's start
costs the tokenizer only the pieces that differ. Texts are counted with the function
litellm's counter itself uses (fetched once per model: the counter's own work around it
cost more than the count); a message is the rest of it plus its text. The total equals
counting the whole request at once (tests/llm/test_llm_window.py checks it). The default
encoding, which offline models use, is counted by the same rules without importing
litellm (`aiscientist.llm.default_count`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import aiscientist.llm.default_count as default_count
import aiscientist.llm.quiet as quiet

DEFAULT_ENCODING = ""  # litellm's default: tiktoken's cl100k_base
_SYSTEM = [{"role": "system", "content": ""}]


def _key(value: Any) -> str:
    """The cache key: JSON in the value's own key order (litellm formats tools in that order)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _counter(model: str, **kwargs: Any) -> int:
    return int(quiet.litellm().token_counter(model=model, **kwargs))


@functools.lru_cache(maxsize=64)
def _primer(model: str) -> int:
    return default_count.REPLY_PRIMER if model == DEFAULT_ENCODING else _counter(model, messages=[])


@functools.lru_cache(maxsize=64)
def _pieces(model: str) -> tuple[int, int] | None:
    """(piece length, longest text counted exactly) when litellm counts a text for
    `model` with tiktoken as the sum of its fixed-length pieces; None when its
    tokenizer counts a text whole (a Hugging Face tokenizer)."""
    if model == DEFAULT_ENCODING:
        return default_count.PIECE_CHARS, default_count.MAX_EXACT_CHARS
    try:
        from litellm.litellm_core_utils.token_counter import (
            TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS,
            TOKEN_COUNTER_MAX_EXACT_CHARS,
        )
        from litellm.utils import select_tokenizer

        if select_tokenizer(model)["type"] == "openai_tokenizer":
            return TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS, TOKEN_COUNTER_MAX_EXACT_CHARS
    except Exception:  # another litellm version: messages are counted whole
        pass
    return None


@functools.lru_cache(maxsize=8192)
def _message_tokens(model: str, message: str) -> int:
    parsed, pieces = json.loads(message), _pieces(model)
    content = parsed.get("content")
    if pieces and isinstance(content, str) and 0 < len(content) <= pieces[1]:
        # the rest of the message, then each piece of its text: a prompt that differs
        # from an earlier one only towards its end reuses the counts of its start
        piece = pieces[0]
        rest = _message_tokens(model, _key({**parsed, "content": ""}))
        return rest + sum(_text_tokens(model, content[i : i + piece]) for i in range(0, len(content), piece))
    if model == DEFAULT_ENCODING and content in (None, ""):
        counted = default_count.message_tokens(parsed, 0)
        if counted is not None:
            return counted
    return _counter(model, messages=[parsed]) - _primer(model)


@functools.lru_cache(maxsize=256)
def _tool_tokens(model: str, tools: str, system: bool) -> int:
    counted = default_count.tool_tokens(json.loads(tools), system) if model == DEFAULT_ENCODING else None
    if counted is not None:
        return counted
    prefix = _SYSTEM if system else []
    return _counter(model, messages=prefix, tools=json.loads(tools)) - _counter(model, messages=prefix)


@functools.lru_cache(maxsize=8192)
def _text_tokens(model: str, text: str) -> int:
    return _count_text(model, text)


def _count_text(model: str, text: str) -> int:
    """= litellm.token_counter(model=model, text=text)."""
    return _text_counter(model)(text)


@functools.lru_cache(maxsize=64)
def _text_counter(model: str) -> Callable[[str], int]:
    """The function litellm's counter counts a text with for `model` (its tokenizer chosen
    once), or the counter itself where this litellm has no such function."""
    if model == DEFAULT_ENCODING:
        return _default_text
    try:
        from litellm.litellm_core_utils.token_counter import _get_count_function

        count = _get_count_function(model, None)
        if count("probe ✓ text") == _counter(model, text="probe ✓ text"):
            return count
    except Exception:  # another litellm version
        pass
    return lambda text: _counter(model, text=text)


def _default_text(text: str) -> int:
    counted = default_count.text_tokens(text)
    return counted if counted is not None else _counter(DEFAULT_ENCODING, text=text)


@functools.lru_cache(maxsize=64)
def counting_model(model: str) -> str:
    """`model` when litellm can count with its tokenizer offline, else the default
    encoding (e.g. a Hugging Face tokenizer that would need the network)."""
    try:
        _counter(model, text="probe")
        return model
    except Exception:
        return DEFAULT_ENCODING


class TokenCounter:
    """Counts for one model (`DEFAULT_ENCODING` for offline models)."""

    def __init__(self, model: str = DEFAULT_ENCODING):
        self.model = counting_model(model) if model else DEFAULT_ENCODING

    def message(self, message: dict[str, Any]) -> int:
        return _message_tokens(self.model, _key(message))

    def tools(self, tools: list[dict[str, Any]], system: bool) -> int:
        return _tool_tokens(self.model, _key(tools), system) if tools else 0

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        """= litellm.token_counter(model, messages=messages, tools=tools)."""
        system = any(m.get("role") == "system" for m in messages)
        return sum(self.message(m) for m in messages) + _primer(self.model) + self.tools(tools, system)

    def text(self, text: str) -> int:
        return _text_tokens(self.model, text) if text else 0
