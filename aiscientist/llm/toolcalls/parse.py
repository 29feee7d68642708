"""Tool calls written as text, as models without native function calling write them.

Forms found in real replies (Qwen2.5-Coder 0.5B/1.5B behind llama.cpp, Hermes-style
models): `<tool_call>{...}</tool_call>`, fenced ```json blocks, bare JSON objects, several
objects in one reply (newline-separated or in a JSON list), `{{...}}` doubled braces,
line breaks written raw inside JSON strings (multi-line notes and code),
python-call style `name({...})`; arguments as an object or as a JSON string, under
`arguments`, `parameters`, `args` or `input`, or beside the name (`{"name": "finish",
"summary": ...}`). An attempt that is not valid JSON (quotes left unescaped inside a string:
`"summary": "split (`args.split="val"`)"`, a brace missing) is read by json_repair. The parser
never raises: what it cannot read but looks like an attempt to call a tool comes back as a
`TextCall` with an error. A reply holding only a tool's arguments (`{"summary": ...}` where
`finish` is the one tool taking them) is that tool's call (`arguments_only_call`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import json_repair

from aiscientist.llm.messages import tools_taking

MAX_SCAN_CHARS = 200_000  # a reply longer than this is read up to here
MAX_STARTS = 400  # JSON decoding attempts per reply: bounds the work on hostile text
MAX_REPAIR_CHARS = 20_000  # an unreadable attempt is repaired from its first this many characters
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
CALL_KEYS = ("name", "tool", "function", "type", "id")  # the rest of a call without an arguments key are its arguments
CALL_FORMAT = '{"name": "<tool>", "arguments": {...}}'

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_CALLER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*$")
_ATTEMPT = re.compile(r"\{\s*\{?\s*[\"'](?:name|function|tool)[\"']\s*:")
_NAME = re.compile(r"[\"']name[\"']\s*:\s*[\"']([^\"']{1,200})[\"']")
# a Python string where JSON wants one (`"content": """..."""`); it ends where the object goes on, so the
# docstrings inside a file's code stay in it
_TRIPLE = re.compile(r'(:\s*)"""(.*?)"""(?=\s*(?:,\s*"\w+"\s*:|\}))', re.DOTALL)
_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*$", re.MULTILINE)  # a code fence's own line
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


@dataclass(frozen=True)
class TextCall:
    """One call read from text; `arguments` is a dict, or the raw string when it was no
    JSON object; `error` says why an attempt could not be read at all."""

    name: str
    arguments: dict[str, Any] | str
    error: str | None = None


def parse_text_calls(text: str) -> list[TextCall]:
    """Every tool call in `text`, in order of appearance."""
    text = text[:MAX_SCAN_CHARS]
    tagged = _TAGGED.findall(text)
    if tagged:
        return [call for block in tagged for call in _from_block(block)]
    calls = _scan(text)
    if not calls and "{{" in text:
        calls = _scan(text.replace("{{", "{").replace("}}", "}"))
    if not calls and _ATTEMPT.search(text):
        calls = _repaired(text) or [_unreadable(text)]
    return calls


def arguments_only_call(text: str, tools: list[dict[str, Any]]) -> TextCall | None:
    """The call of the one tool whose arguments are the whole reply, a JSON object (fenced or not) whose
    keys are among the tool's parameters and hold the required ones: the 1.5B model answered
    `{"summary": ...}` for finish(summary) nine times in one run. None when the reply holds more
    than the object, or no tool or several fit."""
    body = _FENCE.sub("", text[:MAX_SCAN_CHARS]).strip()
    try:
        value = json.loads(body, strict=False)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not value:
        return None
    fits = tools_taking(value, tools)
    return TextCall(name=fits[0], arguments=value) if len(fits) == 1 else None


def _from_block(block: str) -> list[TextCall]:
    calls = _scan(block)
    if not calls and "{{" in block:
        calls = _scan(block.replace("{{", "{").replace("}}", "}"))
    return calls or _repaired(block) or [_unreadable(block)]


def _repaired(text: str) -> list[TextCall]:
    """The calls of the first attempt as json_repair reads it, up to a closing fence ([]: none).
    An attempt that does not end with its closing brace was cut short (the token limit): no
    guess at the rest, so a half-written file is never written."""
    found = _ATTEMPT.search(text)
    if found is None:
        return []
    chunk = text[found.start() : found.start() + MAX_REPAIR_CHARS].split("\n```", 1)[0].split("</tool_call>", 1)[0]
    if not chunk.rstrip().endswith("}"):
        return []
    chunk = _TRIPLE.sub(lambda m: m.group(1) + json.dumps(m.group(2)), chunk)
    try:
        value = json_repair.loads(chunk)
    except Exception:  # a library reading hostile text: any failure means unreadable
        return []
    calls = _calls_in(value, None) or []
    # a string misread as a key (its text became a name) is no call: better refused than written empty
    return [c for c in calls if isinstance(c.arguments, str) or all(_KEY.fullmatch(k) for k in c.arguments)]


def _unreadable(text: str) -> TextCall:
    found = _NAME.search(text)
    return TextCall(
        name=found.group(1) if found else "",
        arguments="",
        error=f"the reply looks like a tool call but holds no readable JSON object; write each call as {CALL_FORMAT}",
    )


def _scan(text: str) -> list[TextCall]:
    """Calls from the JSON values that start at a `{` (or a `[` directly before one)."""
    decoder, calls, at, starts = json.JSONDecoder(strict=False), [], 0, 0  # raw newlines in strings: as meant
    while starts < MAX_STARTS:
        at = _next_start(text, at)
        if at < 0:
            break
        starts += 1
        try:
            value, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            at += 1
            continue
        found = _calls_in(value, _caller_before(text, at))
        if found is None:  # not a call: its insides are data, not calls
            at = end
            continue
        calls.extend(found)
        at = end
    return calls


def _next_start(text: str, at: int) -> int:
    brace = text.find("{", at)
    bracket = text.find("[", at)
    while bracket >= 0 and (brace < 0 or bracket < brace):
        if text[bracket + 1 : bracket + 64].lstrip().startswith("{"):
            return bracket
        bracket = text.find("[", bracket + 1)
    return brace


def _caller_before(text: str, at: int) -> str | None:
    found = _CALLER.search(text[max(0, at - 80) : at])
    return found.group(1) if found else None


def _calls_in(value: Any, caller: str | None) -> list[TextCall] | None:
    """The calls a decoded JSON value holds, None when it holds none."""
    if isinstance(value, list):
        calls = [c for item in value for c in (_calls_in(item, None) or [])]
        return calls or None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI's own shape, written out as text
        value = value["function"]
    name = next((value[k] for k in ("name", "tool", "function") if isinstance(value.get(k), str)), None)
    if name is None:
        return [TextCall(name=caller, arguments=value)] if caller else None
    flat = {k: v for k, v in value.items() if k not in CALL_KEYS}  # {"name": "finish", "summary": ...}
    arguments = next((value[k] for k in ARGUMENT_KEYS if k in value), flat)
    return [TextCall(name=name.strip(), arguments=_arguments(arguments))]


def _arguments(raw: Any) -> dict[str, Any] | str:
    """An object as it is; a string holding a JSON object decoded (stays a string if not)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw, strict=False) if raw.strip() else {}
        except (ValueError, RecursionError):
            return raw
        return decoded if isinstance(decoded, dict) else raw
    return json.dumps(raw)
