"""Text blocks several prompts share: the task as agents see it, bus rules, log tails."""

from __future__ import annotations

import re

from aiscientist.specialists.runtime import Runtime


def task_brief(rt: Runtime) -> str:
    """The task's one-screen summary, with editable files named by workspace path."""
    task = rt.task
    files = ", ".join(f"submission/{p}" for p in task.editable_globs) or "(none)"
    text = re.sub(r"^Editable files:.*$", f"Editable files: {files}", task.summary(), count=1, flags=re.M)
    return text + f"\nStep budget: {rt.steps} experiment steps in total."


def bus_rules(rt: Runtime) -> str:
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


def tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]
