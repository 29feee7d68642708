"""The facts block: the one machine-readable line every agent prompt carries.

A prompt states its facts (role, editable files, metric and direction, baseline, step
budget, counters, the call's arguments) once, as a line `FACTS: {json}` built by
`facts_line`. The prose around it is for people and language models; the offline policy
reads only these lines (`read_facts`), the tools offered and the tool calls and results,
so rewording a prompt cannot change what it does.
"""

from __future__ import annotations

import json
from typing import Any

PREFIX = "FACTS: "


def facts_line(**facts: Any) -> str:
    """`FACTS: {...}` with the given facts (None values left out)."""
    return PREFIX + json.dumps({k: v for k, v in facts.items() if v is not None}, sort_keys=True, default=str)


def task_facts(task: Any, editable: list[str]) -> dict[str, Any]:
    """What every role may know about the task: metric, direction, baseline, the
    editable files (run-folder paths) and the kind of task."""
    metric = task.metric
    return {
        "kind": task.kind,
        "metric": metric.label if metric else None,
        "direction": metric.direction if metric else None,
        "baseline": task.baseline,
        "editable": editable,
    }


def read_facts(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The facts of a conversation: its FACTS lines (system and user messages), later
    lines overriding earlier ones."""
    facts: dict[str, Any] = {}
    for m in messages:
        content = m.get("content")
        if m.get("role") not in ("system", "user") or not isinstance(content, str) or PREFIX not in content:
            continue
        for line in content.splitlines():
            if line.startswith(PREFIX):
                try:
                    found = json.loads(line[len(PREFIX) :])
                except json.JSONDecodeError:
                    continue
                facts.update(found if isinstance(found, dict) else {})
    return facts
