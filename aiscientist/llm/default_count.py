"""litellm's count for its default encoding, without importing litellm.

Offline and scripted models are counted with litellm's default encoding (tiktoken's
cl100k_base). Importing litellm costs ~4 s of CPU, a third of a short offline run, and
every offline process paid it just to count. The rules here are OpenAI's published
accounting, as litellm applies it to that encoding: a text is counted in pieces of 1,024
characters; a message costs 3 tokens plus its string fields (a name 1 more) and its tool
calls' arguments; a request 3 more for the reply; tool definitions are counted as the
TypeScript-like namespace OpenAI renders them into, plus 9, less 4 when the request has a
system message. A value these rules do not cover returns None and is counted by litellm
(tests/llm/test_default_count.py checks every rule against litellm's counter).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PIECE_CHARS = 1024  # litellm's TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS
MAX_EXACT_CHARS = 4_000_000  # litellm's TOKEN_COUNTER_MAX_EXACT_CHARS: longer texts are sampled
REPLY_PRIMER = 3
PER_MESSAGE, PER_NAME = 3, 1
TOOLS_OVERHEAD, SYSTEM_DISCOUNT = 9, 4


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    """cl100k_base from the copy litellm ships, as litellm itself loads it (no network)."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed: its bundled tokenizer files are needed to count tokens")
    bundled = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    os.environ["TIKTOKEN_CACHE_DIR"] = os.environ.get("CUSTOM_TIKTOKEN_CACHE_DIR") or str(bundled)
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def text_tokens(text: str) -> int | None:
    if len(text) > MAX_EXACT_CHARS:
        return None
    encode = _encoding().encode
    return sum(len(encode(text[i : i + PIECE_CHARS], disallowed_special=())) for i in range(0, len(text), PIECE_CHARS))


def message_tokens(message: Mapping[str, Any], content_tokens: int) -> int | None:
    """A message's tokens, its content counted already (`content_tokens`)."""
    total = PER_MESSAGE + content_tokens
    for key, value in message.items():
        if key == "content" or value is None:
            continue
        if key == "tool_calls":
            calls = _tool_call_tokens(value)
            if calls is None:
                return None
            total += calls
        elif isinstance(value, str):
            count = text_tokens(value)
            if count is None:
                return None
            total += count + (PER_NAME if key == "name" else 0)
        else:
            return None
    return total


def _tool_call_tokens(calls: Any) -> int | None:
    if not isinstance(calls, list):
        return None
    total = 0
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            return None
        count = text_tokens(str(function.get("arguments", "")))
        if count is None:
            return None
        total += count
    return total


def tool_tokens(tools: list[Any], system: bool) -> int | None:
    """Tool definitions' tokens; None for a tool not in OpenAI's {"type": "function"} shape."""
    functions = [tool.get("function") if isinstance(tool, Mapping) else None for tool in tools]
    if not all(isinstance(function, Mapping) for function in functions):
        return None
    rendered = "\n".join(["namespace functions {", "", *_render_functions(functions), "} // namespace functions"])
    count = text_tokens(rendered)
    return None if count is None else count + TOOLS_OVERHEAD - (SYSTEM_DISCOUNT if system else 0)


def _render_functions(functions: list[Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    for function in functions:
        if not function.get("name"):
            continue
        description = function.get("description")
        lines += [f"// {description}"] if description else []
        parameters = function.get("parameters") or {}
        if isinstance(parameters, Mapping) and _has_properties(parameters):
            lines += [f"type {function['name']} = (_: {{", _render_object(parameters, 0), "}) => any;", ""]
        else:
            lines += [f"type {function['name']} = () => any;", ""]
    return lines


def _has_properties(schema: Mapping[str, Any]) -> bool:
    properties = schema.get("properties")
    return isinstance(properties, Mapping) and bool(properties)


def _render_object(schema: Mapping[str, Any], indent: int) -> str:
    if not _has_properties(schema):
        return ""
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    lines: list[str] = []
    for name, field in schema["properties"].items():
        description = field.get("description") if isinstance(field, Mapping) else None
        lines += [f"// {description}"] if description else []
        lines.append(f"{name}{'' if name in required else '?'}: {_render_type(field, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def _render_type(field: Any, indent: int) -> str:
    if not isinstance(field, Mapping):
        return "any"
    kind, enum = field.get("type"), field.get("enum")
    if kind in ("string", "integer", "number") and isinstance(enum, list):
        return " | ".join(f'"{item}"' for item in enum)
    if kind == "array":
        return f"{_render_type(field.get('items'), indent)}[]"
    if kind == "object":
        return f"{{\n{_render_object(field, indent + 2)}\n}}"
    return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}.get(
        kind if isinstance(kind, str) else "", "any"
    )
