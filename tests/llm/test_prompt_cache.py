"""Cached prompt tokens, counted and priced: the real client through litellm's HTTP path against
a loopback server answering in each provider's own usage shape (OpenAI, Anthropic, DeepSeek,
Gemini, llama.cpp's server), and Anthropic's breakpoints on a role's stable prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aiscientist.llm import LLMConfig, make_client, read_records
from aiscientist.records.accounting import call_usage
from tests.fixtures.llm.fake_openai import FakeOpenAI

MESSAGES = [
    {"role": "system", "content": "ROLE: implementation\nYou change code."},
    {"role": "user", "content": "TASK BRIEF: make the loss smaller."},
    {"role": "assistant", "content": "I read train.py first."},
    {"role": "user", "content": "STATUS: step 2 of 3"},
]
TOOL = {"type": "function", "function": {"name": "finish", "description": "End.", "parameters": {"type": "object"}}}
CHOICE = {"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}
OPENAI = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [CHOICE]}


def openai_usage(prompt: int, completion: int, **extra: Any) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, **extra}


ANSWERS: dict[str, tuple[dict[str, Any], int, int, int, int]] = {  # model: (body, prompt, cached, written, completion)
    "openai/gpt-4o-mini": (
        {**OPENAI, "usage": openai_usage(1200, 30, prompt_tokens_details={"cached_tokens": 1024})}, 1200, 1024, 0, 30
    ),
    "deepseek/deepseek-chat": (
        {**OPENAI, "usage": openai_usage(1200, 30, prompt_cache_hit_tokens=1100, prompt_cache_miss_tokens=100)},
        1200, 1100, 0, 30,
    ),
    "anthropic/claude-sonnet-4-5": (  # input_tokens are the uncached rest: the prompt is 100 + 200 + 900
        {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {
                "input_tokens": 100, "output_tokens": 30, "cache_creation_input_tokens": 200,
                "cache_read_input_tokens": 900,
            },
        },
        1200, 900, 200, 30,
    ),
    "gemini/gemini-2.5-flash": (
        {
            "candidates": [{"content": {"parts": [{"text": "done"}], "role": "model"}, "finishReason": "STOP"}],
            "usageMetadata": {
                "promptTokenCount": 1200, "candidatesTokenCount": 30, "totalTokenCount": 1230,
                "cachedContentTokenCount": 1000,
            },
        },
        1200, 1000, 0, 30,
    ),
    "openai/qwen-local": (  # llama.cpp's server: its timings say how much of the prompt it kept
        {**OPENAI, "usage": openai_usage(1200, 30), "timings": {"cache_n": 1150, "prompt_n": 50}}, 1200, 1150, 0, 30
    ),
}  # fmt: skip


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI", "ANTHROPIC", "DEEPSEEK", "GEMINI"):
        monkeypatch.setenv(f"{name}_API_KEY", "loopback")


def answered(body: dict[str, Any]) -> FakeOpenAI:
    return FakeOpenAI(brain=lambda request: {"status": 200, "body": body, "headers": {}})


def base(model: str, server: FakeOpenAI) -> str:
    """OpenAI-compatible providers take `/v1`; Anthropic and Gemini add their own paths."""
    return f"http://127.0.0.1:{server.port}" if model.startswith(("anthropic/", "gemini/")) else server.api_base


@pytest.mark.parametrize("model", list(ANSWERS))
def test_each_providers_cached_tokens_are_recorded_and_priced(model: str, tmp_path: Path) -> None:
    body, prompt, cached, written, completion = ANSWERS[model]
    with answered(body) as server:
        config = LLMConfig(model=model, api_base=base(model, server), timeout_s=5, max_attempts=1)
        c = make_client(model, tmp_path, config=config).complete(MESSAGES, [TOOL])
    (record,) = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert (c.prompt_tokens, c.cached_tokens, c.completion_tokens) == (prompt, cached, completion)
    assert (record["prompt_tokens"], record["cached_tokens"], record.get("cache_write_tokens", 0)) == (
        prompt, cached, written,
    )  # fmt: skip
    import litellm  # after aiscientist, which keeps litellm on its local cost map

    try:
        full = sum(litellm.cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion))
        cost = sum(
            litellm.cost_per_token(
                model=model, prompt_tokens=prompt, completion_tokens=completion,
                cache_read_input_tokens=cached, cache_creation_input_tokens=written,
            )
        )  # fmt: skip
    except Exception:  # a local model litellm does not price: the fallback price, nothing saved
        prices = config.fallback_price_per_1k_prompt, config.fallback_price_per_1k_completion
        full = cost = (prompt * prices[0] + completion * prices[1]) / 1000
    assert record["cost"] == pytest.approx(cost) == c.cost
    assert record["cache_saved"] == pytest.approx(full - cost, abs=1e-8)
    usage = call_usage([record])
    assert (usage.prompt_tokens, usage.cached_tokens) == (prompt, cached)
    assert usage.cached_share == pytest.approx(cached / prompt) and usage.cache_saved == pytest.approx(full - cost)


def test_openai_cached_tokens_cost_what_litellm_charges_for_them(tmp_path: Path) -> None:
    """gpt-4o-mini: 176 fresh prompt tokens at $0.15/M, 1,024 cached at $0.075/M, 30 out at $0.60/M."""
    body = ANSWERS["openai/gpt-4o-mini"][0]
    with answered(body) as server:
        config = LLMConfig(model="openai/gpt-4o-mini", api_base=server.api_base, timeout_s=5, max_attempts=1)
        c = make_client("openai/gpt-4o-mini", tmp_path, config=config).complete(MESSAGES)
    assert c.cost == pytest.approx((176 * 0.15 + 1024 * 0.075 + 30 * 0.6) / 1e6)
    (record,) = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert record["cache_saved"] == pytest.approx(1024 * (0.15 - 0.075) / 1e6)


def test_anthropic_requests_close_the_roles_stable_prefix_with_breakpoints(tmp_path: Path) -> None:
    body = ANSWERS["anthropic/claude-sonnet-4-5"][0]
    with answered(body) as server:
        model = "anthropic/claude-sonnet-4-5"
        config = LLMConfig(model=model, api_base=base(model, server), timeout_s=5, max_attempts=1)
        client = make_client(model, tmp_path, config=config)
        client.complete(MESSAGES, [TOOL])
        client.complete(MESSAGES[:2])  # the brief is the last message: it changes, no breakpoint on it
        sent, alone = server.requests
    marked = {"type": "ephemeral"}
    assert sent["tools"][-1]["cache_control"] == marked
    assert sent["system"][-1]["cache_control"] == marked and "ROLE: implementation" in sent["system"][-1]["text"]
    brief, *rest = sent["messages"]
    assert brief["content"][-1] == {"type": "text", "text": MESSAGES[1]["content"], "cache_control": marked}
    assert all("cache_control" not in str(m) for m in rest)  # what changes is after the breakpoints
    assert "cache_control" in str(alone["system"]) and "cache_control" not in str(alone["messages"])


def test_openai_compatible_requests_carry_no_breakpoints(tmp_path: Path) -> None:
    with answered(ANSWERS["openai/gpt-4o-mini"][0]) as server:
        config = LLMConfig(model="openai/gpt-4o-mini", api_base=server.api_base, timeout_s=5, max_attempts=1)
        make_client("openai/gpt-4o-mini", tmp_path, config=config).complete(MESSAGES, [TOOL])
    assert "cache_control" not in str(server.requests[0])  # OpenAI caches a repeated prefix by itself


def test_a_runs_cached_share_and_savings_reach_result_json_the_summary_and_run_html(tmp_path: Path) -> None:
    """A whole `solve` whose server reports half of every prompt as cached (OpenAI's shape)."""
    import aiscientist.orchestrator  # noqa: F401  (registers its roles' offline policies, which the brain runs)
    from aiscientist.cli.app import main
    from tests.fixtures.llm.fake_openai import policy_brain
    from tests.fixtures.llm.runs import calls, models_file, result, solve

    policy, reported = policy_brain(2), {"prompt": 0, "cached": 0}

    def caching(body: dict[str, Any]) -> dict[str, Any]:
        answer = policy(body)
        usage = answer["body"]["usage"]
        usage["prompt_tokens_details"] = {"cached_tokens": usage["prompt_tokens"] // 2}
        reported["prompt"] += usage["prompt_tokens"]
        reported["cached"] += usage["prompt_tokens"] // 2
        return answer

    run = tmp_path / "run"
    with FakeOpenAI(brain=caching) as server:
        models = models_file(tmp_path, server.api_base, model="openai/gpt-4o-mini", timeout_s=5)
        done = solve(run, models, "--set", "specialists.readers=[code]", model="openai/gpt-4o-mini")
    assert done.returncode == 0, done.stdout + done.stderr
    records, summary = calls(run), result(run)
    assert sum(r["cached_tokens"] for r in records) == reported["cached"] == summary["cached_tokens"] > 0
    assert summary["prompt_tokens"] == reported["prompt"]
    saved = sum(r["cache_saved"] for r in records)
    assert summary["cache_saved"] == pytest.approx(saved)
    assert saved == pytest.approx(reported["cached"] * 0.075e-6, abs=1e-7)  # gpt-4o-mini: $0.15/M, cached $0.075/M
    share = f"{100 * reported['cached'] / reported['prompt']:.0f}% of"
    assert f"{share} " in done.stdout and "prompt tokens cached" in done.stdout
    assert main(["show", str(run)]) == 0 and f"{share} " in (run / "run.html").read_text()
