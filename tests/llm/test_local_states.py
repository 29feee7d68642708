"""`aiscientist.llm.local.serve.lean_states` on the real 0.5B model in this process: a saved prompt state
holds no copy of n_batch x vocabulary logits, and a model resumed from it answers as one that decoded
the prompt itself (greedy tokens equal)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from aiscientist.llm.local.gguf import cache_dir
from aiscientist.llm.local.serve import lean_states

GGUF = cache_dir() / "qwen2.5-coder-0.5b.gguf"
if importlib.util.find_spec("llama_cpp") is None or not GGUF.with_suffix(".gguf.verified").is_file():
    if os.environ.get("AISCIENTIST_REQUIRE_LOCAL_MODEL"):
        pytest.fail("AISCIENTIST_REQUIRE_LOCAL_MODEL is set but the 0.5B model is missing", pytrace=False)
    pytest.skip("the 0.5B model is missing: run scripts/setup.sh --local-model", allow_module_level=True)


def greedy(model, tokens: list[int], n: int = 6) -> list[int]:
    out = []
    for token in model.generate(tokens, temp=0.0, top_k=1):
        out.append(token)
        if len(out) == n:
            return out
    return out


def test_a_saved_state_keeps_one_row_of_logits_and_resumes_to_the_same_answer(monkeypatch) -> None:
    import llama_cpp

    monkeypatch.setattr(llama_cpp.Llama, "save_state", lean_states(llama_cpp.Llama.save_state))
    model = llama_cpp.Llama(model_path=str(GGUF), n_ctx=256, n_batch=64, n_threads=2, verbose=False)
    prompt = model.tokenize(b"def add(a, b):\n    return")
    fresh = greedy(model, prompt)
    model.reset()
    model.eval(prompt[:-2])
    state = model.save_state()
    assert state.scores.shape == (1, model.n_vocab()) and state.n_tokens == len(prompt) - 2
    model.reset()
    model.eval(model.tokenize(b"something else entirely"))
    model.load_state(state)
    assert list(model.input_ids[: model.n_tokens]) == prompt[:-2]
    assert greedy(model, prompt) == fresh
