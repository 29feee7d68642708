"""The `scripted:PATH` model and configuration loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiscientist.llm import LLMConfig, ModelConfigError, ScriptExhausted, load_llm_config, make_client, read_records

SCRIPT = Path(__file__).parents[1] / "fixtures" / "llm" / "script.yaml"
TOOLS = [
    {
        "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
MESSAGES = [{"role": "user", "content": "go"}]


def test_script_is_answered_in_order_then_runs_out(tmp_path: Path) -> None:
    client = make_client(f"scripted:{SCRIPT}", tmp_path, role="implementation")
    first = client.complete(MESSAGES, tools=TOOLS)
    assert first.content == "I will read the training script."
    assert [(t.name, t.arguments, t.error) for t in first.tool_calls] == [("read_file", {"path": "train.py"}, None)]
    second = client.complete(MESSAGES, tools=TOOLS)
    assert "not valid JSON" in second.tool_calls[0].error
    assert second.message["tool_calls"][0]["function"]["arguments"] == '{"path": '
    # a second client of the same run continues the same script
    other = make_client(f"scripted:{SCRIPT}", tmp_path, role="helper")
    assert other.complete(MESSAGES).content == "All done."
    with pytest.raises(ScriptExhausted, match="holds 3 responses and call 4 asked for another"):
        client.complete(MESSAGES)
    records = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert [(r["role"], r["outcome"], r["cost"]) for r in records] == [
        ("implementation", "ok", 0.0),
        ("implementation", "ok", 0.0),
        ("helper", "ok", 0.0),
        ("implementation", "error", 0.0),
    ]
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in records[:3])  # counted with tiktoken


def test_bad_scripts_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="no such script file"):
        make_client(f"scripted:{tmp_path / 'missing.yaml'}")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- content: hi\n- tool_calls: [{arguments: {}}]\n")
    with pytest.raises(ModelConfigError, match=r"bad.yaml: response 1: .*name"):
        make_client(f"scripted:{bad}")
    bad.write_text("{}\n")
    with pytest.raises(ModelConfigError, match="non-empty list"):
        make_client(f"scripted:{bad}")


def test_model_settings_merge_file_entry_and_overrides(tmp_path: Path) -> None:
    file = tmp_path / "models.yaml"
    file.write_text(
        "defaults: {timeout_s: 30, budget: {calls: 10}}\n"
        "models:\n  openai/x: {api_base: 'http://127.0.0.1:9/v1', budget: {tokens: 500}}\n"
    )
    cfg = load_llm_config("openai/x", file, max_attempts=2)
    assert (cfg.timeout_s, cfg.api_base, cfg.max_attempts) == (30, "http://127.0.0.1:9/v1", 2)
    assert (cfg.budget.calls, cfg.budget.tokens) == (10, 500)
    assert load_llm_config("openai/y", file).api_base is None
    file.write_text("defaults: {timeout_s: -1}\n")
    with pytest.raises(ModelConfigError, match="timeout_s"):
        load_llm_config("offline", file)
    with pytest.raises(ModelConfigError, match="no such model config file"):
        load_llm_config("offline", tmp_path / "nope.yaml")
    assert load_llm_config("offline").model == "offline"  # the shipped configs/models.yaml loads
    assert isinstance(make_client("offline", config=LLMConfig()).config, LLMConfig)


def test_langchain_messages_reach_the_model_as_openai_dicts(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from aiscientist.llm.facts import read_facts

    history = [
        SystemMessage('help\nFACTS: {"role": "helper"}'),
        HumanMessage("read a"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "a"}}]),
        ToolMessage("Error: no such file: a", tool_call_id="c1"),
    ]
    client = make_client("offline", tmp_path, config=LLMConfig(seed=0))
    client.complete(history, tools=TOOLS)
    dicts = [
        {"role": "system", "content": 'help\nFACTS: {"role": "helper"}'},
        {"role": "user", "content": "read a"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "id": "c1", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: no such file: a"},
    ]
    client.complete(dicts, tools=TOOLS)
    first, second = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert first["request_hash"] == second["request_hash"]  # the same request either way
    assert read_facts(dicts) == {"role": "helper"}
    with pytest.raises(ValueError, match="unsupported message type int"):
        client.complete([1])


def test_record_and_replay_come_from_the_environment_the_cli_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aiscientist.cli.app import build_parser

    args = build_parser().parse_args(["--record", str(tmp_path / "rec"), "verify", str(tmp_path)])
    assert args.record == str(tmp_path / "rec") and args.replay is None
    monkeypatch.setenv("AISCIENTIST_LLM_REPLAY", str(tmp_path / "rec"))
    assert load_llm_config("offline").replay_dir == tmp_path / "rec"
    assert load_llm_config("offline", replay_dir=tmp_path / "other").replay_dir == tmp_path / "other"
