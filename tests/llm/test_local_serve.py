"""`aiscientist.llm.local.serve`: the counts added to llama-cpp-python's answers. The wrappers take the
methods they wrap, so no model is loaded: a small class with `Llama.generate`'s contract (what the
context holds is `input_ids[:n_tokens]`) stands in; the real server runs in tests/llm/test_real_model.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from aiscientist.llm.local.serve import counted_chat, counted_generate


class Held:
    """llama's context: `input_ids[:n_tokens]` is what it holds; `generate` yields `reply` tokens."""

    def __init__(self, held: list[int], reply: list[int]):
        self.input_ids = np.array(held + [0] * 16, dtype=np.intc)
        self.n_tokens, self.reply = len(held), reply

    def generate(self, tokens: Any, reset: bool = True) -> Iterator[int]:
        yield from self.reply

    def create_chat_completion(self, prompt: list[int], stream: bool = False) -> Any:
        out = [
            {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"delta": {"content": str(t)}}]}
            for t in self.generate(prompt)
        ]
        if stream:
            return iter(out)
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(out), "total_tokens": len(prompt) + len(out)}
        return {"choices": [{"message": {"content": "x"}}], "usage": usage}


Held.generate = counted_generate(Held.generate)  # type: ignore[method-assign]
Held.create_chat_completion = counted_chat(Held.create_chat_completion)  # type: ignore[method-assign]


def test_a_streamed_answer_ends_with_its_usage_and_the_prefix_the_server_kept() -> None:
    model = Held([1, 2, 3, 4, 5], reply=[7, 8])
    chunks = list(model.create_chat_completion([1, 2, 3, 9, 9, 9], stream=True))
    assert [c["choices"] for c in chunks[:2]] == [[{"delta": {"content": "7"}}], [{"delta": {"content": "8"}}]]
    last = chunks[-1]
    assert last["choices"] == [] and last["object"] == "chat.completion.chunk" and last["id"] == "c"
    assert last["usage"] == {
        "prompt_tokens": 6, "completion_tokens": 2, "total_tokens": 8, "prompt_tokens_details": {"cached_tokens": 3},
    }  # fmt: skip


def test_a_whole_answer_carries_the_cached_tokens_and_a_held_prompt_decodes_its_last_token_again() -> None:
    answer = Held([1, 2, 3, 4], reply=[5]).create_chat_completion([1, 2, 3, 4])
    assert answer["usage"]["prompt_tokens_details"] == {"cached_tokens": 3}
    assert Held([], reply=[5]).create_chat_completion([1, 2])["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
