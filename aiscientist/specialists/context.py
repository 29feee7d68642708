"""Text blocks several prompts share: the task as agents see it, bus rules, log tails;
and what of a specialist's conversation is sent again on its next turn."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aiscientist.agent.context import RunContext
from aiscientist.llm.facts import facts_line, task_facts


def task_brief(rt: RunContext, description: bool = True) -> str:
    """The task's one-screen summary, with editable files named by workspace path;
    without the description (for roles that only run and judge), a pointer to it."""
    task = rt.task
    files = ", ".join(f"submission/{p}" for p in task.editable_globs) or "(none)"
    text = re.sub(r"^Editable files:.*$", f"Editable files: {files}", task.summary(), count=1, flags=re.M)
    if not description and task.description.strip():
        text = text.split("\n\n", 1)[0] + "\n(The task's description: task/task.md.)"
    return text + f"\nStep budget: {rt.steps} experiment steps in total."


def facts(rt: RunContext, role: str, **extra: Any) -> str:
    """The prompt's facts block (`aiscientist.llm.facts`) for `role` in this run."""
    editable = [f"submission/{p}" for p in rt.task.editable_globs]
    return facts_line(role=role, bus=rt.ws.file_bus, steps_done=rt.steps_done(), steps_budget=rt.steps, **task_facts(rt.task, editable), **extra)


def bus_rules(rt: RunContext) -> str:
    if rt.ws.file_bus:
        return (
            "File-as-Bus: the workspace files are the shared memory. Read what other specialists wrote "
            "(paper_analysis/, plan/prioritized_tasks.md, logs/exp_log.md, logs/impl_log.md, experiments/) "
            "instead of expecting it in your instructions."
        )
    return (
        "File-as-Bus is OFF: you cannot read other specialists' areas or the logs. Everything you need "
        "from earlier work is in the context of your instructions."
    )


def call_brief(rt: RunContext, request: str, context: str, *after: str, description: bool = True) -> str:
    """A specialist call's instructions: the task, the bus rules, what this call is
    asked to do, the orchestrator's context (if any), then `after` (empty parts dropped)."""
    parts = [task_brief(rt, description), bus_rules(rt), request, f"Context from the orchestrator:\n{context}" if context else "", *after]
    return "\n\n".join(p for p in parts if p)


def steps_used(rt: RunContext) -> str:
    return f"Steps used so far: {rt.steps_done()} of {rt.steps}."


def tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


ACTED_KEEP_CHARS = 200
ACTED_MARK = "\n[... clipped: you have acted since this result; call the tool again if you need it whole]"


def settled(messages: list[dict[str, Any]], is_effect: Callable[[str], bool]) -> list[dict[str, Any]]:
    """The conversation as sent on the next turn: tool results older than the agent's
    latest turn that changed something (an effect tool: write, edit, log, experiment)
    shrink to their first 200 characters. The agent has acted on what it read; the
    files hold the current truth and the tools read it again. Results of that turn
    and later stay whole, and so do the agent's own messages."""
    acted = max((i for i, m in enumerate(messages) if m.get("role") == "assistant" and any(is_effect(c["function"]["name"]) for c in m.get("tool_calls") or [])), default=-1)
    out = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if i < acted and m.get("role") == "tool" and isinstance(content, str) and len(content) > ACTED_KEEP_CHARS + len(ACTED_MARK):
            m = {**m, "content": content[:ACTED_KEEP_CHARS] + ACTED_MARK}
        out.append(m)
    return out
