"""The model client through litellm's real HTTP path against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import aiscientist.orchestrator  # noqa: F401  (AiScientist's arms register their roles' settings)
from aiscientist.agent.registry import role_sampling
from aiscientist.llm import (
    BudgetExhausted,
    BudgetLimits,
    LLMConfig,
    ModelConfigError,
    ModelError,
    ModelUnavailable,
    load_llm_config,
    make_client,
    read_records,
    tool_error_message,
)
from aiscientist.llm.budget import forget_run
from aiscientist.orchestrator.arms import PLAN_TOKENS
from tests.fixtures.llm.fake_openai import FakeOpenAI, error, reply, stall, trickle

MODEL = "openai/fake-model"  # not in litellm's cost map: the fallback price applies
READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "max_lines": {"type": "integer"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}
MESSAGES = [
    {"role": "system", "content": "ROLE: helper\nYou read files."},
    {"role": "user", "content": "Read train.py"},
]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")


def config(server: FakeOpenAI, **kw) -> LLMConfig:
    base = dict(
        model=MODEL,
        api_base=server.api_base,
        timeout_s=5,
        max_attempts=4,
        backoff_base_s=0.05,
        backoff_max_s=0.2,
        fallback_price_per_1k_prompt=0.5,
        fallback_price_per_1k_completion=1.0,
    )
    return LLMConfig(**{**base, **kw})


def calls_log(run: Path) -> list[dict]:
    return read_records(run / "logs" / "llm_calls.jsonl")


def test_completion_with_tool_calls(tmp_path: Path) -> None:
    with FakeOpenAI(
        [reply("Reading it.", [("read_file", '{"path": "train.py"}')], prompt_tokens=120, completion_tokens=30)]
    ) as server:
        client = make_client(MODEL, tmp_path, role="helper", config=config(server))
        c = client.complete(MESSAGES, tools=[READ_FILE])
    sent = server.requests[0]
    assert sent["model"] == "fake-model" and sent["messages"] == MESSAGES
    assert sent["tools"][0]["function"]["name"] == "read_file"
    assert c.content == "Reading it."
    assert [(t.id, t.name, t.arguments, t.error) for t in c.tool_calls] == [
        ("call_0", "read_file", {"path": "train.py"}, None)
    ]
    assert c.message == {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "train.py"}'}}
        ],
    }
    assert (c.prompt_tokens, c.completion_tokens) == (120, 30)
    assert c.cost == pytest.approx((120 * 0.5 + 30 * 1.0) / 1000)
    [record] = calls_log(tmp_path)
    assert record["role"] == "helper" and record["model"] == MODEL and record["outcome"] == "ok"
    assert (record["prompt_tokens"], record["completion_tokens"], record["attempts"]) == (120, 30, 1)
    assert record["cost"] == pytest.approx(c.cost) and record["retry_wait_s"] == 0
    assert record["latency_s"] >= 0 and record["tool_calls"] == ["read_file"] and record["tokens_estimated"] is False


def test_one_call_per_reply_stops_the_generation_after_the_first_call(tmp_path: Path) -> None:
    """The 1.5B model wrote a call, imagined its result and wrote 24 more: the server is asked
    to stop at the end of the first fenced call, and calls past the cap are not run."""
    fenced = [f'```json\n{{"name": "read_file", "arguments": {{"path": "f{i}.py"}}}}\n```\n' for i in range(3)]
    lines = '{"name": "read_file", "arguments": {"path": "a.py"}}\n{"name": "read_file", "arguments": {"path": "b.py"}}'
    with FakeOpenAI([reply("\n".join(fenced)), reply(lines), reply("\n".join(fenced))]) as server:
        one = make_client(MODEL, tmp_path, config=config(server, tool_calls="prompt", calls_per_reply=1))
        first, second = (one.complete(MESSAGES, tools=[READ_FILE]) for _ in range(2))
        unlimited = make_client(MODEL, tmp_path, config=config(server, tool_calls="prompt"))
        third = unlimited.complete(MESSAGES, tools=[READ_FILE])
    asked, _, free = server.requests
    assert asked["stop"] == ["</tool_call>", "\n```\n"] and "stop" not in free
    assert "Write one call per reply" in asked["messages"][0]["content"]
    assert "Several calls may follow" in free["messages"][0]["content"]
    assert [c.arguments["path"] for c in first.tool_calls] == ["f0.py"] and "f1.py" not in first.content
    assert [c.arguments["path"] for c in second.tool_calls] == ["a.py"]  # bare lines: the server cannot stop them
    assert [c.arguments["path"] for c in third.tool_calls] == ["f0.py", "f1.py", "f2.py"]
    assert [r["tool_calls"] for r in calls_log(tmp_path)] == [["read_file"], ["read_file"], ["read_file"] * 3]


def test_rate_limit_honours_retry_after(tmp_path: Path) -> None:
    with FakeOpenAI([error(429, {"Retry-After": "1"}), reply("done")]) as server:
        client = make_client(MODEL, tmp_path, config=config(server))
        assert client.complete(MESSAGES).content == "done"
    assert len(server.requests) == 2
    assert server.times[1] - server.times[0] >= 1.0  # waited as told, not the 0.05 s backoff
    [record] = calls_log(tmp_path)
    assert record["attempts"] == 2 and record["outcome"] == "ok"
    assert 1.0 <= record["retry_wait_s"] <= record["latency_s"]


def test_two_server_errors_then_success(tmp_path: Path) -> None:
    with FakeOpenAI([error(500), error(503), reply("third time")]) as server:
        client = make_client(MODEL, tmp_path, config=config(server))
        assert client.complete(MESSAGES).content == "third time"
    assert len(server.requests) == 3
    [record] = calls_log(tmp_path)
    assert record["attempts"] == 3 and record["outcome"] == "ok"
    # two exponential waits with jitter: 0.025-0.05 s, then 0.05-0.1 s
    assert 0.075 <= record["retry_wait_s"] <= 0.15


def test_timeouts_exhaust_attempts_into_model_error(tmp_path: Path) -> None:
    with FakeOpenAI([stall(3), stall(3)]) as server:
        client = make_client(MODEL, tmp_path, config=config(server, timeout_s=0.4, max_attempts=2))
        start = time.monotonic()
        with pytest.raises(ModelUnavailable, match="gave up after 2 attempts"):
            client.complete(MESSAGES)
        assert time.monotonic() - start < 2.5  # the per-call timeout cut each stall short
    assert len(server.requests) == 2
    [record] = calls_log(tmp_path)
    assert record["outcome"] == "error" and record["kind"] == "unavailable" and record["attempts"] == 2
    assert record["error"].startswith(f"{MODEL}: timed out")  # the cause first, not exception class names
    assert [(r["attempt"], r["status"]) for r in record["retry_log"]] == [(1, None)]
    assert record["prompt_tokens"] == 0 and record["retry_wait_s"] > 0


def test_hard_limit_stops_an_answer_that_trickles_in(tmp_path: Path) -> None:
    with FakeOpenAI([trickle(0.05), reply("fast")]) as server:
        client = make_client(MODEL, tmp_path, config=config(server, timeout_s=0.3))
        start = time.monotonic()
        assert client.complete(MESSAGES).content == "fast"  # each byte came well within 0.3 s
        assert time.monotonic() - start < 3.0
    [record] = calls_log(tmp_path)
    assert record["attempts"] == 2 and 1.3 <= record["latency_s"] < 3.0


def test_client_error_is_not_retried(tmp_path: Path) -> None:
    with FakeOpenAI([error(400), reply("never")]) as server:
        client = make_client(MODEL, tmp_path, config=config(server))
        with pytest.raises(ModelError, match="HTTP 400: planned HTTP 400$"):
            client.complete(MESSAGES)
    assert len(server.requests) == 1
    assert calls_log(tmp_path)[0]["attempts"] == 1


def test_bad_tool_arguments_go_back_to_the_model(tmp_path: Path) -> None:
    plan = [
        reply(None, [("read_file", '{"path": "train.py"')]),  # not JSON
        reply(None, [("read_file", '{"path": "train.py", "max_lines": "all"}')]),  # schema mismatch
        reply(None, [("read_file", '{"path": "train.py", "max_lines": 50}')]),
    ]
    with FakeOpenAI(plan) as server:
        client = make_client(MODEL, tmp_path, config=config(server))
        messages = list(MESSAGES)
        errors = []
        for _ in range(3):
            c = client.complete(messages, tools=[READ_FILE])
            messages.append(c.message)
            [call] = c.tool_calls
            if call.error is None:
                break
            errors.append(call.error)
            messages.append(tool_error_message(call))
    assert call.arguments == {"path": "train.py", "max_lines": 50}
    assert "not valid JSON" in errors[0]
    assert "max_lines" in errors[1] and "'all' is not of type 'integer'" in errors[1]
    # the model saw its own malformed call and the error, in the real request bodies
    second, third = server.requests[1]["messages"], server.requests[2]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["arguments"] == '{"path": "train.py"'
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_0"
    assert second[-1]["content"].startswith("Error: arguments of read_file are not valid JSON")
    assert "do not match its schema" in third[-1]["content"]
    assert [r["outcome"] for r in calls_log(tmp_path)] == ["ok", "ok", "ok"]


def test_budget_stops_before_the_call_that_would_exceed_it(tmp_path: Path) -> None:
    plan = [reply(f"answer {i}", prompt_tokens=100, completion_tokens=20) for i in range(5)]
    with FakeOpenAI(plan) as server:
        cfg = config(server, budget=BudgetLimits(tokens=250))
        client = make_client(MODEL, tmp_path, config=cfg)
        helper = make_client(MODEL, tmp_path, role="helper", config=cfg)  # same run: same budget
        client.complete(MESSAGES)
        helper.complete(MESSAGES)
        with pytest.raises(BudgetExhausted, match="tokens budget exhausted: 240 used") as info:
            client.complete(MESSAGES)  # 240 used + this prompt (~20) + a typical answer (20) > 250
        assert info.value.limit == "tokens"
        assert len(server.requests) == 2
        # a resumed run rebuilds what it used from the log and stays stopped
        forget_run(tmp_path)
        resumed = make_client(MODEL, tmp_path, config=cfg)
        assert resumed.budget.used().tokens == 240 and resumed.budget.used().calls == 2
        with pytest.raises(BudgetExhausted):
            resumed.complete(MESSAGES)
        assert len(server.requests) == 2
    records = calls_log(tmp_path)
    assert [(r["role"], r["outcome"]) for r in records] == [
        ("agent", "ok"),
        ("helper", "ok"),
        ("agent", "budget_exhausted"),
        ("agent", "budget_exhausted"),
    ]
    assert records[2]["attempts"] == 0 and "tokens budget exhausted" in records[2]["error"]


def test_parallel_calls_never_overshoot_the_call_limit(tmp_path: Path) -> None:
    with FakeOpenAI([reply("x") for _ in range(10)]) as server:
        client = make_client(MODEL, tmp_path, config=config(server, budget=BudgetLimits(calls=3, cost_usd=1.0)))
        outcomes: list[str] = []

        def call() -> None:
            try:
                client.complete(MESSAGES)
                outcomes.append("ok")
            except BudgetExhausted:
                outcomes.append("stopped")

        threads = [threading.Thread(target=call) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(outcomes) == ["ok"] * 3 + ["stopped"] * 3
    assert len(server.requests) == 3
    lines = (tmp_path / "logs" / "llm_calls.jsonl").read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(line) for line in lines)


def test_missing_key_is_a_clear_error_before_any_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        make_client("openai/gpt-4o-mini", tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        make_client("anthropic/claude-3-5-sonnet-20240620", tmp_path)
    with pytest.raises(ModelConfigError, match="unknown model 'gpt-nonsense-without-provider'"):
        make_client("gpt-nonsense-without-provider", tmp_path)
    assert not (tmp_path / "logs").exists()


def test_known_model_is_priced_from_litellm_cost_map(tmp_path: Path) -> None:
    with FakeOpenAI([reply("hi", prompt_tokens=1000, completion_tokens=1000)]) as server:
        client = make_client("openai/gpt-4o-mini", tmp_path, config=config(server))
        c = client.complete(MESSAGES)
    import litellm

    prompt_cost, completion_cost = litellm.cost_per_token(
        model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=1000
    )
    assert c.cost == pytest.approx(prompt_cost + completion_cost) and c.cost > 0


def test_missing_usage_is_counted_with_tiktoken(tmp_path: Path) -> None:
    with FakeOpenAI([reply("a short answer of several words", usage=False)]) as server:
        c = make_client(MODEL, tmp_path, config=config(server)).complete(MESSAGES)
    import litellm

    assert c.prompt_tokens == litellm.token_counter(model=MODEL, messages=MESSAGES) > 5
    assert c.completion_tokens == litellm.token_counter(model=MODEL, text="a short answer of several words")
    [record] = calls_log(tmp_path)
    assert record["prompt_tokens"] == c.prompt_tokens and record["tokens_estimated"] is True


def test_retry_after_past_the_patience_fails_instead_of_hanging(tmp_path: Path) -> None:
    with FakeOpenAI([error(429, {"Retry-After": "3600"}), reply("never")]) as server:
        client = make_client(MODEL, tmp_path, config=config(server, patience_s=5))
        with pytest.raises(
            ModelUnavailable, match="HTTP 429: planned HTTP 429 .*retry after 3600 s, past the remaining patience"
        ):
            client.complete(MESSAGES)
    assert len(server.requests) == 1


def test_cost_and_wall_time_limits(tmp_path: Path) -> None:
    with FakeOpenAI([reply("x", prompt_tokens=1000, completion_tokens=1000) for _ in range(3)]) as server:
        # each call costs 0.5 + 1.0 = 1.5 USD at the fallback price; the next one is
        # estimated from its prompt and the answers so far, so it is not made
        client = make_client(MODEL, tmp_path / "cost", config=config(server, budget=BudgetLimits(cost_usd=2.0)))
        client.complete(MESSAGES)
        with pytest.raises(BudgetExhausted, match="cost_usd budget exhausted: 1.5 used"):
            client.complete(MESSAGES)
        assert len(server.requests) == 1
    slow = make_client("offline", tmp_path / "wall", config=LLMConfig(budget=BudgetLimits(wall_time_s=0.3)))
    slow.complete(MESSAGES)
    time.sleep(0.35)
    with pytest.raises(BudgetExhausted, match="wall_time_s"):
        slow.complete(MESSAGES)
    # the wall time already spent survives a resume
    forget_run(tmp_path / "wall")
    resumed = make_client("offline", tmp_path / "wall", config=LLMConfig(budget=BudgetLimits(wall_time_s=0.3)))
    assert resumed.budget.elapsed_s() >= 0.35
    with pytest.raises(BudgetExhausted, match="wall_time_s"):
        resumed.complete(MESSAGES)


def test_a_role_whose_answer_is_a_document_is_not_stopped_at_a_code_fence(tmp_path: Path) -> None:
    """The 1.5B model opened its plan with a plain ``` fence and the fence stop ended the reply there:
    comprehension and prioritization (stop_after_call off, registered by AiScientist's arms) send no stop."""
    assert role_sampling("comprehension") == {"stop_after_call": False}
    assert role_sampling("prioritization") == {"stop_after_call": False, "max_tokens": PLAN_TOKENS}
    assert role_sampling("implementation") == {}
    plan = "### plan\n```\n## P0. raise EPOCHS\n```\n" + "why: " * 60
    with FakeOpenAI([reply(plan)]) as server:
        settings = config(server, tool_calls="prompt", calls_per_reply=1, **role_sampling("prioritization"))
        answer = make_client(MODEL, tmp_path, config=settings).complete(MESSAGES, tools=[READ_FILE])
    [asked] = server.requests
    assert "stop" not in asked and answer.content == plan and not answer.tool_calls


def test_a_model_litellm_cannot_place_is_priced_and_counted_without_its_red_provider_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A `local/` model is priced by its models-file entry (0); litellm, asked first, printed "Provider List" to
    stdout at every lookup (68 times in a 3-step run of the 1.5B model)."""
    import litellm

    from aiscientist.llm.budget import tracker_for_run
    from aiscientist.llm.client import LLMClient
    from aiscientist.llm.tokens import counting_model

    config = load_llm_config("local/qwen2.5-coder-0.5b")
    monkeypatch.setattr(litellm, "suppress_debug_info", False)  # as a process that made no litellm backend
    counting_model.cache_clear()
    client = LLMClient(config, None, tracker_for_run(tmp_path / "run", BudgetLimits()), priced=True)
    monkeypatch.setattr(litellm, "suppress_debug_info", False)
    assert client.price(1000, 100) == 0.0  # the models file's fallback price
    assert client.counter.request([{"role": "user", "content": "hello"}], []) > 0
    assert "Provider List" not in capfd.readouterr().out


def test_a_real_model_is_sent_the_prompt_without_its_facts_lines(tmp_path: Path) -> None:
    """FACTS lines are the offline policy's input; over HTTP the model gets the prose alone (and a file line
    that only looks like one stays)."""
    messages = [
        {"role": "system", "content": 'ROLE: helper\nYou read files.\n\nFACTS: {"role": "helper", "steps_budget": 3}'},
        {"role": "user", "content": 'Read train.py\n\nFACTS: {"args": {"path": "train.py"}}\n\nFACTS: not json\nGo.'},
    ]
    with FakeOpenAI([reply("Reading it.", [("read_file", '{"path": "train.py"}')])]) as server:
        make_client(MODEL, tmp_path, role="helper", config=config(server)).complete(messages, tools=[READ_FILE])
    assert server.requests[0]["messages"] == [
        {"role": "system", "content": "ROLE: helper\nYou read files."},
        {"role": "user", "content": "Read train.py\n\nFACTS: not json\nGo."},
    ]
