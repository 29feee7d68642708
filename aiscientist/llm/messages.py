"""Messages and tool schemas in OpenAI form; parsing and checking tool calls."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

import jsonschema

from aiscientist.llm.types import RawToolCall, ToolArgumentError, ToolCall


def to_openai_messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """OpenAI-style dicts pass through (copied); LangChain-core messages are converted."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, dict):
            if "role" not in m:
                raise ValueError(f"message without a role: {m!r:.200}")
            out.append(dict(m))
        else:
            from langchain_core.messages import BaseMessage, convert_to_openai_messages

            if not isinstance(m, BaseMessage):
                raise ValueError(f"unsupported message type {type(m).__name__}: expected a dict or a LangChain message")
            out.append(convert_to_openai_messages(m))
    return out


def normalize_tools(tools: Iterable[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Full OpenAI tool schemas (`{"type": "function", "function": {...}}`); a bare
    function schema (`{"name", "parameters"}`) is wrapped."""
    out = []
    for t in tools or []:
        fn = t.get("function") if t.get("type") == "function" else t
        if not isinstance(fn, dict) or not fn.get("name"):
            raise ValueError(f"tool schema without a function name: {t!r:.200}")
        fn = {"parameters": {"type": "object", "properties": {}}, **fn}
        out.append({"type": "function", "function": fn})
    return out


def tool_names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def parse_tool_call(raw: RawToolCall, tools: list[dict[str, Any]]) -> ToolCall:
    """Parse and check one call; problems end up in `ToolCall.error`, never raised."""
    try:
        return ToolCall(id=raw.id, name=raw.name, arguments=check_arguments(raw.name, raw.arguments, tools))
    except ToolArgumentError as err:
        return ToolCall(id=raw.id, name=raw.name, arguments={}, error=str(err))


def check_arguments(name: str, arguments: str | dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The arguments as a dict, or ToolArgumentError saying what to fix."""
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
    if name not in schemas:
        raise ToolArgumentError(f"unknown tool {name!r}; available tools: {', '.join(schemas) or '(none)'}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as err:
            raise ToolArgumentError(
                f"arguments of {name} are not valid JSON ({err}); send them again as a JSON object"
            ) from None
    if not isinstance(arguments, dict):
        raise ToolArgumentError(f"arguments of {name} must be a JSON object, got {type(arguments).__name__}")
    err = jsonschema.exceptions.best_match(_validator(json.dumps(schemas[name], sort_keys=True)).iter_errors(arguments))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        others = [other for other in tools_taking(arguments, tools) if other != name]
        # the 1.5B model sent edit_file write_file's {path, content} five times, told only "'old' is required"
        hint = f"; these are the arguments of {others[0]}: call {others[0]} instead" if len(others) == 1 else ""
        message = f"arguments of {name} do not match its schema at {where}: {err.message}{hint}"
        raise ToolArgumentError(message) from None
    return arguments


def tools_taking(arguments: dict[str, Any], tools: list[dict[str, Any]]) -> list[str]:
    """The tools whose parameters hold every key of `arguments`, the required ones among them."""
    out = []
    for tool in tools:
        params = tool["function"].get("parameters") or {}
        known, required = set(params.get("properties") or {}), set(params.get("required") or [])
        if arguments and required <= arguments.keys() <= known:
            out.append(tool["function"]["name"])
    return out


@functools.lru_cache(maxsize=512)
def _validator(schema: str) -> Any:
    """A checked validator per schema, made once: agents send the same schemas every turn."""
    parsed = json.loads(schema)
    cls = jsonschema.validators.validator_for(parsed)
    cls.check_schema(parsed)
    return cls(parsed)


def tool_error_message(call: ToolCall) -> dict[str, Any]:
    """The tool-result message that hands a bad call back to the model to correct."""
    return {"role": "tool", "tool_call_id": call.id, "content": f"Error: {call.error}"}


def assistant_message(content: str, calls: list[RawToolCall]) -> dict[str, Any]:
    """The OpenAI assistant message for the conversation; arguments stay as sent."""
    message: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else "")}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    return message


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


# Wall-clock stamps (ISO 8601 or "YYYY-MM-DD HH:MM:SS") that logs and maps show
# agents; a replayed run happens at another time, so they do not enter the key.
_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")


def request_hash(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """Stable key of a request for record/replay (wall-clock stamps masked): a digest
    over each part's own digest, so a turn that resends a conversation hashes only
    its new messages."""
    parts = [canonical_json(model), canonical_json(tools), *(canonical_json(m) for m in messages)]
    return hashlib.sha256(b"".join(_part_digest(part) for part in parts)).hexdigest()


@functools.lru_cache(maxsize=4096)
def _part_digest(part: str) -> bytes:
    return hashlib.sha256(_CLOCK.sub("<time>", part).encode()).digest()
