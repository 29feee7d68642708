"""The one machine-readable line every agent prompt carries: `FACTS: {json}`.

The offline policy reads only these lines (plus the tools, tool calls and results),
never the prose around them, so rewording a prompt cannot change what it does. A real
model is sent the prompt without them (`without_facts`): the prose says the same, and
the lines cost it ~100 uncached tokens a call (a status's counters, a brief's arguments).
"""

from __future__ import annotations

import json
import re
from typing import Any

PREFIX = "FACTS: "
FLAG = re.compile(r"(?<![^\s'\"])--([A-Za-z][\w-]*)")


def facts_line(**facts: Any) -> str:
    return PREFIX + json.dumps({k: v for k, v in facts.items() if v is not None}, sort_keys=True, default=str)


def task_facts(task: Any, editable: list[str]) -> dict[str, Any]:
    """What every role may know about the task (`editable`: run-folder paths)."""
    metric = task.metric
    return {
        "kind": task.kind,
        "metric": metric.label if metric else None,
        "direction": metric.direction if metric else None,
        "baseline": task.baseline,
        "editable": editable,
        "fixed_flags": fixed_flags(getattr(task, "commands", None) or []),
    }


def fixed_flags(commands: list[str]) -> list[str] | None:
    """The options the task's own commands set (`--max-steps 200` -> `max_steps`): an argparse
    default of the same name never reaches the run, so changing it changes nothing."""
    return sorted({flag.replace("-", "_") for command in commands for flag in FLAG.findall(command)}) or None


def without_facts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without their FACTS lines (those `read_facts` reads) and the blank line before each."""
    return [_stripped(m) if m.get("role") in ("system", "user") else m for m in messages]


def _stripped(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, str) or PREFIX not in content:
        return message
    kept: list[str] = []
    for line in content.split("\n"):
        if _facts_of(line) is None:
            kept.append(line)
        elif kept and not kept[-1]:
            kept.pop()
    return {**message, "content": "\n".join(kept)}


def _facts_of(line: str) -> dict[str, Any] | None:
    """The facts of a FACTS line, else None."""
    if not line.startswith(PREFIX):
        return None
    try:
        found = json.loads(line[len(PREFIX) :])
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def read_facts(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The FACTS lines of the system and user messages, later ones overriding earlier."""
    facts: dict[str, Any] = {}
    for m in messages:
        content = m.get("content")
        if m.get("role") not in ("system", "user") or not isinstance(content, str) or PREFIX not in content:
            continue
        for line in content.splitlines():
            facts.update(_facts_of(line) or {})
    return facts
