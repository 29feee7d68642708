"""Prompt caching at the providers: what each one says it read from (or wrote to) its
cache, and the breakpoints Anthropic needs to cache a role's stable prefix at all.

OpenAI, DeepSeek and Gemini cache a repeated prefix by themselves; Anthropic caches only
up to a `cache_control` breakpoint; llama.cpp reuses the longest prefix it still holds
(`aiscientist.llm.local`). The prompt layout that makes a prefix stable (system prompt,
tools and task brief first) is docs/contracts.md's "Facts block".
"""

from __future__ import annotations

import copy
from typing import Any

EPHEMERAL = {"type": "ephemeral"}


def cache_counts(response: Any) -> tuple[int | None, int | None]:
    """(prompt tokens read from the provider's cache, prompt tokens written to it) of a
    litellm response; None where the provider said nothing. litellm puts OpenAI's
    `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`, DeepSeek's
    `prompt_cache_hit_tokens` and Gemini's `cachedContentTokenCount` into
    `usage.prompt_tokens_details.cached_tokens`, Anthropic's `cache_creation_input_tokens`
    into `cache_write_tokens`; llama.cpp's server reports `timings.cache_n`."""
    details = getattr(getattr(response, "usage", None), "prompt_tokens_details", None)
    read = getattr(details, "cached_tokens", None)
    timings = getattr(response, "timings", None)
    if read is None and isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        read = timings["cache_n"]
    written = getattr(details, "cache_write_tokens", None)
    return _count(read), _count(written)


def stream_cache_read(usage: dict[str, Any], timings: dict[str, Any] | None) -> int | None:
    """Prompt tokens a server (llama.cpp's) read from its cache, from the JSON of its answer:
    `usage.prompt_tokens_details.cached_tokens`, else `timings.cache_n`; None where it said nothing."""
    details = usage.get("prompt_tokens_details")
    read = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    if read is None and isinstance(timings, dict):
        read = _count(timings.get("cache_n"))
    return read


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def needs_breakpoints(model: str) -> bool:
    """Anthropic's models (directly, on Bedrock or on Vertex) cache only what a breakpoint closes."""
    return model.startswith("anthropic/") or "claude" in model.split("/")[-1]


def with_breakpoints(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[list, list]:
    """Copies of the request with `cache_control` breakpoints closing the role's stable prefix:
    the last tool, the system prompt and the first user message (the task brief) when more
    follows it. Anthropic
    reads the tools, then the system prompt, then the messages, and allows four breakpoints."""
    messages, tools = copy.deepcopy(messages), copy.deepcopy(tools)
    if tools:
        tools[-1]["cache_control"] = EPHEMERAL
    system = next((m for m in messages if m.get("role") == "system"), None)
    brief = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    stable = [system] + ([messages[brief]] if brief is not None and brief < len(messages) - 1 else [])
    for message in stable:  # a lone user message changes at every request: no breakpoint to pay for
        if message is not None and message.get("content"):
            message["content"] = _marked(message["content"])
    return messages, tools


def _marked(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The content as blocks, its last block closing a breakpoint."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    if blocks:
        blocks[-1]["cache_control"] = EPHEMERAL
    return blocks
