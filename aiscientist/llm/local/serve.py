"""llama-cpp-python's server, with the counts its answers lack: `python -m aiscientist.llm.local.serve`
takes `python -m llama_cpp.server`'s arguments.

llama-cpp-python (0.3.x) streams no usage at all (it ignores OpenAI's `stream_options`) and reports
no cached prompt tokens in any answer. Its `Llama.generate` is where it decides how much of a prompt
it keeps: the longest prefix shared with the context it holds (after loading the best state from its
prompt cache). This module counts there, per completion, and adds to every chat answer
`usage.prompt_tokens_details.cached_tokens`, and to a streamed one a last chunk with the usage (the
shape of OpenAI's `include_usage`), so a streamed answer is counted by the server as a whole one is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np


def counted_generate(original: Callable[..., Iterator[int]]) -> Callable[..., Iterator[int]]:
    """`Llama.generate`, noting on the model (`_aisci_counts`) the prompt's tokens, those it reuses
    from the context it holds (all but the last when the whole prompt is held: that one is decoded
    again) and the tokens generated."""

    def generate(self: Any, tokens: Any, *args: Any, **kwargs: Any) -> Iterator[int]:
        tokens = list(tokens)
        held = list(self.input_ids[: self.n_tokens]) if kwargs.get("reset", True) and self.n_tokens > 0 else []
        shared = next((i for i, (a, b) in enumerate(zip(held, tokens)) if a != b), min(len(held), len(tokens)))
        counts = {"prompt": len(tokens), "cached": min(shared, max(0, len(tokens) - 1)), "completion": 0}
        self._aisci_counts = counts
        for token in original(self, tokens, *args, **kwargs):
            counts["completion"] += 1
            yield token

    return generate


def counted_chat(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Llama.create_chat_completion` whose answers carry the cached prompt tokens; a stream ends with
    a usage chunk (`choices: []`)."""

    def create_chat_completion(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._aisci_counts = None
        answer = original(self, *args, **kwargs)
        if not kwargs.get("stream"):
            counts = self._aisci_counts
            if counts is not None and isinstance(answer.get("usage"), dict):
                answer["usage"]["prompt_tokens_details"] = {"cached_tokens": counts["cached"]}
            return answer
        return _with_usage(self, answer)

    return create_chat_completion


def _with_usage(model: Any, chunks: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    last = None
    for last in chunks:
        yield last
    counts = model._aisci_counts
    if counts is None or last is None:
        return
    yield {
        "id": last.get("id"),
        "object": "chat.completion.chunk",
        "created": last.get("created"),
        "model": last.get("model"),
        "choices": [],
        "usage": {
            "prompt_tokens": counts["prompt"],
            "completion_tokens": counts["completion"],
            "total_tokens": counts["prompt"] + counts["completion"],
            "prompt_tokens_details": {"cached_tokens": counts["cached"]},
        },
    }


def lean_states(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`Llama.save_state` keeping one row of logits, not n_batch rows, when the model keeps none
    (`logits_all` off: llama.cpp samples inside its sampler and `eval` writes no logits, so the rows
    hold nothing). Every state in the prompt cache carried n_batch x vocabulary floats (~300 MB for
    Qwen's 151,936 tokens) that the cache's size bound does not count: the server grew to 14 GB in a
    10-minute run. `load_state` broadcasts the one row over the rows it restores."""

    def save_state(self: Any) -> Any:
        state = original(self)
        if not self._logits_all:
            state.scores = np.zeros((1, state.scores.shape[1]), dtype=state.scores.dtype)  # not a view: freed
        return state

    return save_state


def main() -> None:
    import llama_cpp
    from llama_cpp.server.__main__ import main as serve

    llama_cpp.Llama.generate = counted_generate(llama_cpp.Llama.generate)
    llama_cpp.Llama.create_chat_completion = counted_chat(llama_cpp.Llama.create_chat_completion)
    llama_cpp.Llama.save_state = lean_states(llama_cpp.Llama.save_state)
    serve()


if __name__ == "__main__":
    main()
