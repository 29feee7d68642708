"""Failures of the model client through litellm's real HTTP path: context overflow
(one trimmed retry, else a clear error), failed calls recorded and replayed as the same
failures, error messages that lead with the cause."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from aiscientist.llm import ContextOverflow, LLMConfig, ModelError, ModelUnavailable, make_client, read_records
from aiscientist.llm.provider.errors import context_sizes
from aiscientist.llm.window import TRIM_MARK
from tests.fixtures.llm.fake_openai import FakeOpenAI, error, overflow, reply

MODEL = "openai/fake-model"
A = "".join(f"a{i} " for i in range(500))[:2000]  # text, not one repeated letter: its tokens grow with its length
B = "".join(f"b{i} " for i in range(500))[:2000]
READ = {"id": "r1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
CONVERSATION = [
    {"role": "system", "content": "ROLE: helper\nYou read files."},
    {"role": "user", "content": "Read a.py, then b.py."},
    {"role": "assistant", "content": None, "tool_calls": [READ]},
    {"role": "tool", "tool_call_id": "r1", "content": A},
    {"role": "assistant", "content": None, "tool_calls": [{**READ, "id": "r2"}]},
    {"role": "tool", "tool_call_id": "r2", "content": B},
    {"role": "user", "content": "Now summarise."},
]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")


def _config(server: FakeOpenAI, **kw) -> LLMConfig:
    return LLMConfig(
        **{"model": MODEL, "api_base": server.api_base, "timeout_s": 5, "patience_s": 2, "backoff_base_s": 0.05, **kw}
    )


def _window(chars: int):
    """A server-side context window of `chars` characters of messages (4 per token)."""

    def fault(body: dict) -> dict | None:
        size = len(json.dumps(body["messages"]))
        return overflow(chars // 4, size // 4) if size > chars else None

    return fault


def test_overflow_clips_the_oldest_tool_results_and_retries_once(tmp_path: Path) -> None:
    with FakeOpenAI([reply("summary")], fault=_window(3300)) as server:
        c = make_client(MODEL, tmp_path, config=_config(server)).complete(CONVERSATION)
    assert c.content == "summary"
    first, second = ([m.get("content") for m in b["messages"]] for b in server.requests)
    assert first == [m["content"] for m in CONVERSATION]
    assert second[3] == A[:200] + TRIM_MARK  # the oldest result was clipped ...
    assert second[5] == B  # ... and that was enough: the newest stays whole
    assert second[:3] + second[4:] == first[:3] + first[4:]
    failed, ok = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert (failed["outcome"], failed["kind"]) == ("error", "context_overflow")
    assert failed["error"].startswith(
        f"{MODEL}: context window exceeded: This model's maximum context length is 825 tokens"
    )
    assert (ok["outcome"], ok["trimmed"]) == ("ok", True)


def test_overflow_that_trimming_cannot_fix_names_the_limit_and_the_size(tmp_path: Path) -> None:
    with FakeOpenAI([overflow(8192, 9000), overflow(8192, 8500), reply("never")]) as server:
        client = make_client(MODEL, tmp_path, config=_config(server))
        with pytest.raises(ContextOverflow) as info:
            client.complete(CONVERSATION)
        assert len(server.requests) == 2  # one smaller retry, no more
        message = str(info.value)
        assert message.startswith(
            f"{MODEL}: the request does not fit the context window: about 8500 tokens, the model's limit is "
            "8192 tokens (still too large"
        )
        assert message.endswith("your messages resulted in 8500 tokens. Please reduce the length of the messages.)")
        with pytest.raises(
            ContextOverflow, match="about 9000 tokens, the model's limit is 8192 tokens \\(no tool result to clip"
        ):
            server.plan[:0] = [overflow(8192, 9000)]
            client.complete(CONVERSATION[:2])  # nothing to clip: no retry
    assert len(server.requests) == 3


def test_patience_bounds_the_retries_and_an_outage_within_it_is_sat_out(tmp_path: Path) -> None:
    """patience_s and backoff_base_s are shortened here (defaults: 600 s and 1 s)."""
    with FakeOpenAI([reply("back")]) as server:
        server.down()  # refused connections
        client = make_client(
            MODEL, tmp_path, config=_config(server, patience_s=1.5, backoff_base_s=0.2, backoff_max_s=0.4)
        )
        started = time.monotonic()
        with pytest.raises(
            ModelUnavailable,
            match=(
                r"connection refused \(http://127.0.0.1:\d+/v1\): nothing listens there .* "
                r"\(model unavailable: gave up after \d+ "
                r"attempts over \d+ s"
            ),
        ):
            client.complete([{"role": "user", "content": "hello"}])
        assert 1.5 <= time.monotonic() - started < 3
        server.down(1.0)  # back after a second, well within the patience
        assert (
            make_client(MODEL, tmp_path, config=_config(server, patience_s=5, backoff_base_s=0.2))
            .complete([{"role": "user", "content": "again"}])
            .content
            == "back"
        )
    failed, ok = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert failed["kind"] == "unavailable" and failed["attempts"] >= 4
    assert all(r["error"].startswith(f"connection refused ({server.api_base}): ") for r in failed["retry_log"])
    # sat out the whole second (waits plus the refused attempts themselves: the waits alone were 0.88 s once)
    assert ok["outcome"] == "ok" and ok["retries"] >= 1 and ok["retry_wait_s"] > 0 and ok["latency_s"] >= 0.9


def _outcomes(client, asks: list[list[dict]]) -> list[str]:
    """Each call's answer, or its error as `Class: message`."""
    out = []
    for messages in asks:
        try:
            out.append(client.complete(messages).content)
        except ModelError as err:
            out.append(f"{type(err).__name__}: {err}")
    return out


def test_failed_calls_are_recorded_and_replayed_as_the_same_failures(tmp_path: Path) -> None:
    store = tmp_path / "rec"
    asks = [[{"role": "user", "content": f"question {i}"}] for i in range(3)]
    with FakeOpenAI([error(400, message="bad request body"), error(503), reply("fine")]) as server:
        seen = _outcomes(
            make_client(MODEL, tmp_path / "live", config=_config(server, record_dir=store, max_attempts=1)), asks
        )
    assert seen[0] == f"ModelError: {MODEL}: HTTP 400: bad request body"
    assert seen[1].startswith(
        f"ModelUnavailable: {MODEL}: HTTP 503: planned HTTP 503 (model unavailable: gave up after 1 attempts"
    )
    assert seen[2] == "fine"

    assert (
        _outcomes(make_client(MODEL, tmp_path / "replayed", config=LLMConfig(model=MODEL, replay_dir=store)), asks)
        == seen
    )
    records = read_records(tmp_path / "replayed" / "logs" / "llm_calls.jsonl")
    assert [(r["outcome"], r.get("kind"), r["replayed"]) for r in records] == [
        ("error", "error", True),
        ("error", "unavailable", True),
        ("ok", None, True),
    ]
    with pytest.raises(ModelUnavailable):  # the class survives the round trip too
        make_client(MODEL, tmp_path / "third", config=LLMConfig(model=MODEL, replay_dir=store)).complete(asks[1])


@pytest.mark.parametrize(
    ("message", "sizes"),
    [
        (
            (
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
                "tokens. Please reduce the length of the messages."
            ),
            (8192, 9000),
        ),
        # llama-cpp-python's server, as it answered a too long request (n_ctx 512)
        (
            (
                "This model's maximum context length is 512 tokens. However, you requested 1518 tokens (1510 in the "
                "messages, 8 in the completion). Please reduce the length of the messages or completion."
            ),
            (512, 1518),
        ),
        ("prompt is too long: 210000 tokens > 200000 maximum", (200000, 210000)),
        ("the request is too large", (None, None)),
    ],
)
def test_context_limit_and_size_are_read_from_the_providers_words(message: str, sizes: tuple) -> None:
    assert context_sizes(message) == sizes
