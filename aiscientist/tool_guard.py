"""Checks and reports shared by the tool dispatchers (the specialists' Toolbox and
the bench baselines'): text a model sends that cannot be encoded, and tools that
raise unexpectedly. Both become tool errors; neither may end a run."""

from __future__ import annotations

import re
import traceback
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def unencodable(arguments: dict[str, Any]) -> str | None:
    """Where tool arguments hold text that UTF-8 cannot encode (a lone surrogate,
    which models can send as `\\udc80` in JSON), said for the model; None when clean."""
    stack: list[tuple[str, Any]] = [(k, v) for k, v in arguments.items()]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack += [(f"{where}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        for text in (where, value):
            found = _SURROGATE.search(text) if isinstance(text, str) else None
            if found:
                name = ascii(where)[1:-1]
                return f"{name}: a lone surrogate {ascii(found.group())} at character {found.start()}; send valid Unicode text"
    return None


def crash_report(tool: str, err: Exception) -> tuple[str, dict[str, Any]]:
    """What the model is told about a tool that raised unexpectedly, and the
    `tool.crashed` event payload (with the last lines of the traceback)."""
    error = f"{type(err).__name__}: {err}"[:500].encode(errors="backslashreplace").decode()
    lines = "".join(traceback.format_exception(err)).strip().splitlines()[-6:]
    return f"the tool {tool} failed unexpectedly: {error}", {"tool": tool, "error": error, "traceback": lines}
