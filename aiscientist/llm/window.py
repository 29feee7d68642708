"""The context window: how large it is, and the one rule that makes a request fit it.

The rule (used before sending, and again when a provider still answers "context
window exceeded"): tool results are clipped to their first 200 characters plus a
marker, oldest first, until the request's token count is within the budget. Nothing
else changes: system prompt, instructions, the model's own messages and the newest
results stay whole as long as clipping older results is enough. A request that does
not fit once every tool result is clipped is refused with a ContextOverflow naming
the limit and the request's size, before anything is sent.

The window is the models file's `context_window` when set, else litellm's
`max_input_tokens` for the model, else DEFAULT_CONTEXT_WINDOW for the offline and
scripted models. A provider model litellm does not know has no window here: its
requests are sent as they are, and a provider's overflow answer is trimmed by the
same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiscientist.llm.tokens import TokenCounter
from aiscientist.llm.types import ContextOverflow

DEFAULT_CONTEXT_WINDOW = 128_000  # offline and scripted models: a common window of current models
TRIM_KEEP_CHARS = 200
TRIM_MARK = "\n[... clipped to fit the model's context window]"
RETRY_MARGIN = 0.9  # after an overflow, aim 10% below the provider's limit


@dataclass
class Fitted:
    """A request after the rule: its messages, its size in tokens, results clipped."""

    messages: list[dict[str, Any]]
    size: int
    clipped: int = 0


def context_window(model: str, override: int | None, offline: bool) -> int | None:
    """Max input tokens of `model` (see the module's docstring for the order)."""
    if override is not None:
        return override
    if offline:
        return DEFAULT_CONTEXT_WINDOW
    import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # a model litellm does not know
        return None
    return info.get("max_input_tokens") or info.get("max_tokens")


def fit(counter: TokenCounter, messages: list[dict[str, Any]], tools: list[dict[str, Any]], budget: int | None) -> Fitted:
    """The trimming rule: clip tool results, oldest first, until the request is at most
    `budget` tokens (None: no limit) or no tool result is left to clip."""
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
    """The error for a request that does not fit even after the rule."""
    how = f"after clipping {fitted.clipped} old tool result(s)" if fitted.clipped else "with no tool result to clip"
    return ContextOverflow(
        f"{model}: the request does not fit the context window: {fitted.size} tokens {how}, the model's limit is {limit} tokens "
        "(not sent; shorten the instructions or raise context_window in the models file)",
        limit,
        fitted.size,
    )
