"""Tool calls written as text: the parser on replies the real local models wrote (fixtures),
on hostile strings (hypothesis), and the modes' requests and checked calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiscientist.llm.messages import assistant_message
from aiscientist.llm.toolcalls import TOOLS_SLOT, outgoing, parse_text_calls, render_tools, reply_calls
from aiscientist.llm.toolcalls.modes import REMINDER
from aiscientist.llm.toolcalls.parse import MAX_SCAN_CHARS
from aiscientist.llm.types import RawToolCall

REPLIES = json.loads((Path(__file__).parents[1] / "fixtures" / "llm" / "real_replies.json").read_text())


def tool(name: str, required: dict[str, str]) -> dict:
    props = {k: {"type": v} for k, v in required.items()}
    schema = {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": f"the {name} tool", "parameters": schema}}


EDIT = {"path": "string", "old": "string", "new": "string"}
TOOLS = [tool("read_file", {"path": "string"}), tool("run_experiment", {"hypothesis": "string"}), tool("finish", {})]


@pytest.mark.parametrize("case", REPLIES, ids=[c["id"] for c in REPLIES])
def test_replies_recorded_from_the_real_models_parse_to_their_calls(case: dict) -> None:
    calls = parse_text_calls(case["content"])
    assert [(c.name, c.arguments) for c in calls] == [(n, a) for n, a in case["calls"]]
    assert all(c.error is None for c in calls)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>',
            [("read_file", {"path": "a.py"})],
        ),
        (
            '```json\n{"name": "read_file", "arguments": {"path": "a"}}\n{"name": "finish", "arguments": {}}\n```',
            [("read_file", {"path": "a"}), ("finish", {})],
        ),
        (
            '[{"name": "finish", "arguments": {}}, {"name": "read_file", "arguments": {"path": "b"}}]',
            [("finish", {}), ("read_file", {"path": "b"})],
        ),
        ('{"name": "read_file", "arguments": "{\\"path\\": \\"c\\"}"}', [("read_file", {"path": "c"})]),
        ('{{"name": "read_file", "parameters": {{"path": "d"}}}}', [("read_file", {"path": "d"})]),
        ('read_file({"path": "e"})', [("read_file", {"path": "e"})]),
        ('{"type": "function", "function": {"name": "finish", "arguments": {}}}', [("finish", {})]),
        (
            '{"name": "finish", "arguments": {"summary": "line one\n- line two"}}',
            [("finish", {"summary": "line one\n- line two"})],
        ),
        ('{"name": "finish", "summary": "done"}', [("finish", {"summary": "done"})]),  # the 1.5B model's reader
        ("I will now read the file and think about it.", []),
        ('The config is {"lr": 0.1, "epochs": 3}.', []),
    ],
)
def test_text_forms_models_write(text: str, expected: list) -> None:
    assert [(c.name, c.arguments) for c in parse_text_calls(text)] == expected


def test_an_unreadable_attempt_is_an_error_naming_the_format() -> None:
    [call] = parse_text_calls('{"name": "read_file", "arguments": {"path": "a.py"')
    assert call.name == "read_file" and call.error is not None and '"arguments"' in call.error


def test_an_attempt_cut_short_is_not_completed_by_guessing() -> None:
    """Repair reads quotes left unescaped, never the rest of a reply the token limit cut."""
    cut = '{"name": "write_file", "arguments": {"path": "a.py", "content": "x = \\"1\\"\\nfor i in'
    [call] = parse_text_calls(cut)
    assert call.error is not None
    [call] = parse_text_calls('<tool_call>{"name": "finish", "arguments": {"summary": "the "val" split"}}</tool_call>')
    assert (call.name, call.arguments, call.error) == ("finish", {"summary": 'the "val" split'}, None)


def test_python_triple_quotes_are_read_as_the_string_they_mean() -> None:
    """The 1.5B implementation specialist wrote file contents as a Python triple-quoted string."""
    text = '```json\n{"name": "write_file", "arguments": {"path": "c.py", "content": """A = 1\nB = "x"\n"""}}'
    [call] = parse_text_calls(text)
    assert (call.arguments, call.error) == ({"path": "c.py", "content": 'A = 1\nB = "x"\n'}, None)
    code = 'def f():\n    """Doc."""\n    return 1\n'  # the docstrings of the file stay in it
    [call] = parse_text_calls(f'{{"name": "write_file", "arguments": {{"content": """{code}""", "path": "f.py"}}}}')
    assert (call.arguments, call.error) == ({"content": code, "path": "f.py"}, None)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}[]"\\:,<>/ \nnametoolargumentscall_() ')), max_size=400))
def test_hostile_strings_never_raise(text: str) -> None:
    for call in parse_text_calls(text):
        assert isinstance(call.name, str) and (call.error is not None or isinstance(call.arguments, (dict, str)))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200), st.text(max_size=30))
def test_a_call_inside_any_prose_is_found(before: str, after: str, path: str) -> None:
    call = json.dumps({"name": "read_file", "arguments": {"path": path}})
    found = parse_text_calls(f"{before}\n{call}\n{after}")
    assert ("read_file", {"path": path}) in [(c.name, c.arguments) for c in found if c.error is None]


def test_a_huge_hostile_reply_is_read_quickly() -> None:
    import time

    text = "{" * (MAX_SCAN_CHARS * 2) + '[{"name": ' * 5000
    started = time.monotonic()
    parse_text_calls(text)
    assert time.monotonic() - started < 5


def test_checked_calls_name_the_problem_for_the_model() -> None:
    content = "\n".join(
        json.dumps(c)
        for c in (
            {"name": "read_file", "arguments": {"path": "a.py"}},
            {"name": "delete_everything", "arguments": {}},
            {"name": "read_file", "arguments": {"path": 3}},
        )
    )
    raws, calls = reply_calls("text", content, [], TOOLS)
    assert [c.name for c in calls] == ["read_file", "delete_everything", "read_file"] == [r.name for r in raws]
    assert calls[0].error is None and calls[0].arguments == {"path": "a.py"}
    assert "unknown tool 'delete_everything'" in (calls[1].error or "") and "read_file" in (calls[1].error or "")
    assert "schema" in (calls[2].error or "") and "path" in (calls[2].error or "")
    assert len({r.id for r in raws}) == 3 and reply_calls("text", content, [], TOOLS)[0] == raws  # stable ids


def test_modes_choose_between_native_and_text_calls() -> None:
    native = [RawToolCall(id="n1", name="finish", arguments="{}")]
    text = json.dumps({"name": "read_file", "arguments": {"path": "a"}})
    assert [c.name for c in reply_calls("native", text, [], TOOLS)[1]] == []
    assert [c.name for c in reply_calls("auto", text, native, TOOLS)[1]] == ["finish"]
    assert [c.name for c in reply_calls("auto", text, [], TOOLS)[1]] == ["read_file"]
    assert [c.name for c in reply_calls("text", text, native, TOOLS)[1]] == ["finish", "read_file"]
    assert reply_calls("prompt", text, [], [])[1] == []  # no tools offered: text is never a call


def test_prompt_mode_sends_no_tools_and_writes_them_into_the_system_prompt() -> None:
    history = [
        {"role": "system", "content": "ROLE: helper"},
        {"role": "user", "content": "read a.py"},
        assistant_message("", [RawToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}')]),
        {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "x = 1"},
        {"role": "user", "content": "go on"},
    ]
    messages, tools = outgoing("prompt", history, TOOLS)
    assert tools == [] and [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("ROLE: helper") and render_tools(TOOLS) in messages[0]["content"]
    assert json.loads(messages[2]["content"]) == {"name": "read_file", "arguments": {"path": "a.py"}}
    assert "Result of read_file:\nx = 1" in messages[3]["content"]
    assert messages[3]["content"].endswith("go on")  # the last reply called a tool: no reminder
    prose = [
        *history,
        {"role": "assistant", "content": "I think we should read it."},
        {"role": "user", "content": "go"},
    ]
    assert outgoing("prompt", prose, TOOLS)[0][-1]["content"] == f"go\n\n{REMINDER}"  # the format, read last
    assert not any("tool_calls" in m for m in messages)
    assert outgoing("text", history, TOOLS) == (history, TOOLS)


def test_a_system_prompt_marks_where_a_prompt_mode_tool_block_goes() -> None:
    """What every role shares, then the tools, then the role's own text: one role's cached prefix serves the next."""
    history = [{"role": "system", "content": f"the task{TOOLS_SLOT}ROLE: helper"}, {"role": "user", "content": "go"}]
    messages, _ = outgoing("prompt", history, TOOLS)
    assert messages[0]["content"] == f"the task\n\n{render_tools(TOOLS)}\n\nROLE: helper"
    for mode in ("native", "text", "auto"):  # the schemas travel apart: the mark is gone
        assert outgoing(mode, history, TOOLS)[0][0]["content"] == "the task\n\nROLE: helper"
    assert outgoing("prompt", history, [])[0][0]["content"] == "the task\n\nROLE: helper"
    assert history[0]["content"] == f"the task{TOOLS_SLOT}ROLE: helper"  # the conversation is not changed


def test_a_call_with_another_tools_arguments_is_told_which_tool_takes_them() -> None:
    """The 1.5B model sent edit_file write_file's {path, content} five times, told only that 'old' was required."""
    tools = [tool("write_file", {"path": "string", "content": "string"}), tool("edit_file", EDIT)]
    reply = json.dumps({"name": "edit_file", "arguments": {"path": "a.py", "content": "x = 2\n"}})
    [call] = reply_calls("prompt", reply, [], tools)[1]
    assert call.error.endswith("; these are the arguments of write_file: call write_file instead")
    reply = json.dumps({"name": "edit_file", "arguments": {"path": "a.py"}})  # no other tool takes them: no guess
    assert reply_calls("prompt", reply, [], tools)[1][0].error.endswith("is a required property")


def test_a_reply_of_only_one_tools_arguments_is_that_tools_call() -> None:
    """The 1.5B model's experimentation answered `{"summary": ...}` for finish(summary) nine times in one run."""
    tools = [tool("run_experiment", {"hypothesis": "string"}), tool("finish", {"summary": "string"})]
    fenced = '```json\n{\n  "summary": "No improvement over step 1"\n}\n```'
    raws, calls = reply_calls("prompt", fenced, [], tools)
    assert [(c.name, c.arguments, c.error) for c in calls] == [
        ("finish", {"summary": "No improvement over step 1"}, None)
    ]
    assert json.loads(raws[0].arguments) == {"summary": "No improvement over step 1"}
    two_fit = [tool("read_file", {"path": "string"}), tool("list_files", {"path": "string"})]
    assert reply_calls("prompt", '{"path": "a.py"}', [], two_fit)[1] == []  # several tools fit: none is guessed
    assert reply_calls("prompt", '{"summary": "x", "extra": 1}', [], tools)[1] == []  # a key no tool takes
    assert reply_calls("prompt", 'Done. {"summary": "x"}', [], tools)[1] == []  # prose around it: no call
    assert reply_calls("prompt", "{}", [], tools)[1] == []
