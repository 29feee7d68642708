"""The context window: how large it is, and the rule that makes one request fit it.

The request rule (before sending, and again after a provider's "context window
exceeded"): clip tool results to their first 200 characters, oldest first, until the
request fits; everything else stays whole. What still does not fit is refused, unsent,
with a ContextOverflow. A model litellm does not know has no window here: its requests
are sent as they are, and only a provider's overflow answer triggers the rule.

What a growing conversation forgets after a ContextOverflow is the agent's conversation
memory (`aiscientist.agent.memory`), not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiscientist.llm.quiet as quiet
from aiscientist.llm.tokens import TokenCounter
from aiscientist.llm.types import ContextOverflow

DEFAULT_CONTEXT_WINDOW = 128_000  # offline and scripted models: a common window of current models
TRIM_KEEP_CHARS = 200
TRIM_MARK = "\n[... clipped to fit the model's context window]"
RETRY_MARGIN = 0.9  # after an overflow, aim 10% below the provider's limit


@dataclass
class Fitted:
    messages: list[dict[str, Any]]
    size: int
    clipped: int = 0


def context_window(model: str, override: int | None, offline: bool) -> int | None:
    """Max input tokens: the models file's `context_window`, else litellm's figure."""
    if override is not None:
        return override
    if offline:
        return DEFAULT_CONTEXT_WINDOW
    try:
        info = quiet.litellm().get_model_info(model)
    except Exception:  # a model litellm does not know
        return None
    return info.get("max_input_tokens") or info.get("max_tokens")


def fit(
    counter: TokenCounter, messages: list[dict[str, Any]], tools: list[dict[str, Any]], budget: int | None
) -> Fitted:
    size = counter.request(messages, tools)
    if budget is None or size <= budget:
        return Fitted(messages, size)
    out, clipped = [dict(m) for m in messages], 0
    for m in out:
        if size <= budget:
            break
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, str) and len(content) > TRIM_KEEP_CHARS + len(TRIM_MARK):
            before = counter.message(m)
            m["content"] = content[:TRIM_KEEP_CHARS] + TRIM_MARK
            size += counter.message(m) - before
            clipped += 1
    return Fitted(out, size, clipped)


def retry_budget(size: int, err: ContextOverflow) -> int:
    """The budget for the one retry after the provider refused a request of `size`
    tokens (our count): its share that the provider says fits, less RETRY_MARGIN, or
    half when the provider did not say (our tokenizer may differ from the provider's,
    so the provider's own ratio is applied to our count)."""
    if err.limit and err.size and err.size > err.limit:
        return int(size * err.limit / err.size * RETRY_MARGIN)
    return size // 2


def too_large(model: str, fitted: Fitted, limit: int) -> ContextOverflow:
    how = f"after clipping {fitted.clipped} old tool result(s)" if fitted.clipped else "with no tool result to clip"
    return ContextOverflow(
        f"{model}: the request does not fit the context window: {fitted.size} tokens {how}, the model's limit is "
        f"{limit} tokens "
        "(not sent; shorten the instructions or raise context_window in the models file)",
        limit,
        fitted.size,
    )
