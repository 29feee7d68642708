"""Record a multi-call conversation against the loopback server, then replay it offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiscientist.llm import LLMConfig, ReplayMiss, make_client, read_records
from tests.fixtures.llm.fake_openai import FakeOpenAI, reply

MODEL = "openai/fake-model"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_experiment",
            "parameters": {
                "type": "object",
                "properties": {"hypothesis": {"type": "string"}},
                "required": ["hypothesis"],
            },
        },
    }
]
PLAN = [
    reply(
        "Let me try a bigger learning rate.",
        [("run_experiment", '{"hypothesis": "lr x2"}')],
        prompt_tokens=80,
        completion_tokens=12,
    ),
    reply(
        "Better. Try more epochs.",
        [("run_experiment", '{"hypothesis": "epochs x2"}')],
        prompt_tokens=140,
        completion_tokens=11,
    ),
    reply("Done: lr x2 and epochs x2.", prompt_tokens=200, completion_tokens=9),
]


def conversation(client, results: list[str]) -> list[tuple[str, list]]:
    """A three-call tool loop; tool results are fixed so both runs ask the same things."""
    messages = [
        {"role": "system", "content": "ROLE: experimentation"},
        {"role": "user", "content": "Improve the metric."},
    ]
    seen = []
    for result in results + [None]:
        c = client.complete(messages, tools=TOOLS)
        seen.append((c.content, [(t.name, t.arguments) for t in c.tool_calls], c.prompt_tokens, c.cost))
        messages.append(c.message)
        if result is None:
            break
        messages += [{"role": "tool", "tool_call_id": t.id, "content": result} for t in c.tool_calls]
    return seen


def test_record_then_replay_reproduces_every_response(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    store = tmp_path / "recording"
    with FakeOpenAI(PLAN) as server:
        cfg = LLMConfig(model=MODEL, api_base=server.api_base, record_dir=store, fallback_price_per_1k_prompt=1.0)
        recorded = conversation(make_client(MODEL, tmp_path / "run1", config=cfg), ["metric 0.5", "metric 0.4"])
    assert len(server.requests) == 3 and len(list(store.glob("*.json"))) == 3
    assert recorded[0][1] == [("run_experiment", {"hypothesis": "lr x2"})]

    # no server and no key: every answer comes from the recording
    monkeypatch.delenv("OPENAI_API_KEY")
    replay_cfg = LLMConfig(model=MODEL, replay_dir=store, fallback_price_per_1k_prompt=1.0)
    replayed = conversation(make_client(MODEL, tmp_path / "run2", config=replay_cfg), ["metric 0.5", "metric 0.4"])
    assert replayed == recorded
    records = read_records(tmp_path / "run2" / "logs" / "llm_calls.jsonl")
    assert [r["replayed"] for r in records] == [True] * 3
    assert [r["prompt_tokens"] for r in records] == [80, 140, 200]  # same accounting as the recorded run

    # a changed request (a different tool result) is a loud miss naming hash and difference
    with pytest.raises(ReplayMiss) as miss:
        conversation(make_client(MODEL, tmp_path / "run3", config=replay_cfg), ["metric 0.9", "metric 0.4"])
    text = str(miss.value)
    assert "message 3 (tool) differs in 'content'" in text and "'metric 0.5'" in text and "'metric 0.9'" in text
    failed = read_records(tmp_path / "run3" / "logs" / "llm_calls.jsonl")[-1]
    assert (
        failed["outcome"] == "error"
        and f"replay miss: no recorded response for request {failed['request_hash']}" in text
    )


def test_record_and_replay_together_is_refused(tmp_path: Path) -> None:
    from aiscientist.llm import ModelConfigError

    with pytest.raises(ModelConfigError, match="exclusive"):
        make_client("offline", config=LLMConfig(record_dir=tmp_path / "a", replay_dir=tmp_path / "b"))
