"""How a model's tool calls travel, per the models file's `tool_calls` setting.

- `native`: schemas in the request's `tools`; calls only from the reply's own tool calls.
- `text`: schemas in `tools`; calls also read from the reply's text (`parse.py`).
- `auto` (default): native calls when the reply has them, else the text is read.
- `prompt`: no `tools` parameter; the schemas and the call format are written into the
  system prompt, earlier calls and results are sent as plain text, after a reply without a
  call the last user turn ends with a one-line reminder of the format; calls come from text.

`calls_per_reply` (text and prompt modes) caps the calls run from one reply. A small model
asked for one call per reply otherwise writes a call, imagines its result and writes the
next, for a thousand tokens (the 1.5B model: 25 calls in 180 s); with 1 the prompt asks for
one call and the server stops generating at the end of the first fenced or tagged call.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from aiscientist.llm.messages import check_arguments, parse_tool_call
from aiscientist.llm.toolcalls.parse import CALL_FORMAT, arguments_only_call, parse_text_calls
from aiscientist.llm.types import RawToolCall, ToolArgumentError, ToolCall

ToolCallMode = Literal["native", "text", "prompt", "auto"]
TOOLS_HEADING = "# Tools"
# closes the last user turn of a `prompt`-mode request after a reply without a tool call:
# small models follow the format when it is the last thing they read (at the end of the
# prompt, the shared prefix stays intact)
REMINDER = f"Reply with tool calls, one JSON object per line: {CALL_FORMAT}. Prose alone does nothing."
STOP_AFTER_CALL = ["</tool_call>", "\n```\n"]  # the end of a tagged or fenced call (a fence opens with ```json)
# where a system prompt wants a `prompt`-mode tool block (else it is appended): a role's prompt puts what every role
# shares before it and its own instructions after, so one role's cached prefix serves the next role's first call
# (llama.cpp resumes from the longest prefix it holds; hosted providers cache prefixes too). Other modes drop it.
TOOLS_SLOT = "\n\n<<tools>>\n\n"


def stop_sequences(mode: ToolCallMode, tools: list[dict[str, Any]], calls_per_reply: int | None) -> list[str] | None:
    """Where the server should stop generating: after the first call when one is all that runs."""
    return STOP_AFTER_CALL if calls_per_reply == 1 and tools and mode in ("text", "prompt") else None


def render_tools(tools: list[dict[str, Any]], calls_per_reply: int | None = None) -> str:
    """The tool block of a `prompt`-mode system prompt: how to call, then one line per tool."""
    several = "Several calls may follow one another, one object per line. Write nothing else on those lines;"
    one = "Write one call per reply and nothing after it: you cannot know its result before it comes back;"
    lines = [
        TOOLS_HEADING,
        "You act only by calling tools. To call a tool, write a JSON object on its own line:",
        CALL_FORMAT,
        one if calls_per_reply == 1 else several,
        "the results come back in the next message. The tools, with the JSON Schema of their arguments:",
    ]
    for t in tools:
        fn = t["function"]
        spec = {"name": fn["name"], "description": fn.get("description", ""), "parameters": fn.get("parameters", {})}
        lines.append(json.dumps(spec, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines)


def outgoing(
    mode: ToolCallMode, messages: list[dict[str, Any]], tools: list[dict[str, Any]], calls_per_reply: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages and `tools` to send in this mode."""
    if mode != "prompt" or not tools:
        return _fill_slot(messages, "\n\n"), tools
    names = {c.get("id"): c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
    plain = [_plain(m, names) for m in messages]
    block = render_tools(tools, calls_per_reply)
    if plain and plain[0].get("role") == "system" and TOOLS_SLOT in str(plain[0].get("content")):
        plain = _fill_slot(plain, f"\n\n{block}\n\n")
    elif plain and plain[0].get("role") == "system":
        plain[0] = {**plain[0], "content": f"{plain[0].get('content') or ''}\n\n{block}"}
    else:
        plain.insert(0, {"role": "system", "content": block})
    plain = _merge_users(plain)
    if _answered_in_prose(messages) and plain[-1].get("role") == "user" and isinstance(plain[-1].get("content"), str):
        plain[-1] = {**plain[-1], "content": f"{plain[-1]['content']}\n\n{REMINDER}"}
    return plain, []


def _fill_slot(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The messages with the system prompt's TOOLS_SLOT replaced by `text` (the first only: the rest is the role's)."""
    first = messages[0] if messages else {}
    content = first.get("content")
    if first.get("role") != "system" or not isinstance(content, str) or TOOLS_SLOT not in content:
        return messages
    return [{**first, "content": content.replace(TOOLS_SLOT, text, 1)}, *messages[1:]]


def _answered_in_prose(messages: list[dict[str, Any]]) -> bool:
    """The model's last reply called no tool (the continue message then repeats the format)."""
    replies = [m for m in messages if m.get("role") == "assistant"]
    return bool(replies) and not replies[-1].get("tool_calls")


def _plain(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A message as text only: calls as the JSON lines the model wrote, results as a user turn
    naming the tool (`names`: call id -> tool, for results that do not carry it)."""
    role = message.get("role")
    if role == "tool":
        name = message.get("name") or names.get(message.get("tool_call_id")) or "tool"
        return {"role": "user", "content": f"Result of {name}:\n{message.get('content') or ''}"}
    if role == "assistant" and message.get("tool_calls"):
        text = message.get("content") or "\n".join(
            json.dumps({"name": c["function"]["name"], "arguments": _loads(c["function"]["arguments"])})
            for c in message["tool_calls"]
        )
        return {"role": "assistant", "content": text}
    return {k: v for k, v in message.items() if k != "tool_calls"}


def _merge_users(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive user turns joined into one: chat templates expect turns to alternate."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if out and m.get("role") == "user" == out[-1].get("role") and isinstance(m.get("content"), str):
            out[-1] = {**out[-1], "content": f"{out[-1].get('content') or ''}\n\n{m['content']}"}
        else:
            out.append(m)
    return out


def _loads(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def reply_calls(
    mode: ToolCallMode,
    content: str,
    native: list[RawToolCall],
    tools: list[dict[str, Any]],
    calls_per_reply: int | None = None,
) -> tuple[list[RawToolCall], list[ToolCall]]:
    """The calls of a reply: as the conversation keeps them (raw) and parsed and checked.
    Without tools offered, no text is read as a call; past `calls_per_reply` text calls are dropped."""
    if mode == "native" or not tools or (native and mode == "auto"):
        return native, [parse_tool_call(c, tools) for c in native]
    raws, checked = list(native), [parse_tool_call(c, tools) for c in native]
    digest = hashlib.sha256(content.encode()).hexdigest()[:10]  # stable ids: replays resend the same messages
    found_calls = parse_text_calls(content)
    if not found_calls and not native:
        lone = arguments_only_call(content, tools)
        found_calls = [lone] if lone else []
    for i, found in enumerate(found_calls[:calls_per_reply]):
        call_id = f"call_{digest}_{i}"
        arguments = found.arguments if isinstance(found.arguments, str) else json.dumps(found.arguments)
        raws.append(RawToolCall(id=call_id, name=found.name, arguments=arguments))
        if found.error is not None:
            checked.append(ToolCall(id=call_id, name=found.name, error=found.error))
            continue
        try:
            checked.append(
                ToolCall(id=call_id, name=found.name, arguments=check_arguments(found.name, found.arguments, tools))
            )
        except ToolArgumentError as err:
            checked.append(ToolCall(id=call_id, name=found.name, error=str(err)))
    return raws, checked
