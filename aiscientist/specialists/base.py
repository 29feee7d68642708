"""A specialist call on the kernel's loop: fresh private context, own tools, a turn limit, finish.

A specialist call starts from two messages (its role's system prompt and the call's
instructions), talks to the model until it calls `finish(summary)` or runs out of
turns, and returns a bounded summary plus the artifacts it wrote. Effects are
journaled by position so a resumed run replays them instead of redoing them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from aiscientist.agent.context import RunContext
from aiscientist.agent.loop import LoopSpec
from aiscientist.agent.loop import run_loop as kernel_loop
from aiscientist.agent.outcome import StopReason
from aiscientist.agent.shell import shell_tool
from aiscientist.agent.tools import Tool, Toolbox, clip, file_tools, finish_tool
from aiscientist.agent.toolsets import pick
from aiscientist.llm.types import ToolCall
from aiscientist.specialists.context import settled

NUDGE = "Use your tools to make progress; call finish(summary) when you are done."


class SpecialistResult(BaseModel):
    """What a specialist hands back. `full_output` is only shown to the orchestrator
    when File-as-Bus is off (then it is the only way results travel)."""

    role: str
    summary: str
    artifacts: list[str] = []
    full_output: str = ""
    ok: bool = True
    turns: int = 0

    def for_orchestrator(self, file_bus: bool, limit: int) -> str:
        head = f"[{self.role}: {'done' if self.ok else 'stopped'} in {self.turns} turn(s)]"
        files = f"\nArtifacts: {', '.join(self.artifacts)}" if self.artifacts else ""
        if file_bus:
            return f"{head}\n{clip(self.summary, limit)}{files}"
        return f"{head}\n{self.full_output or self.summary}{files}"


def role_toolbox(rt: RunContext, role: str, scope_role: str | None = None, extra: Callable[[Toolbox], list[Tool]] | None = None) -> Toolbox:
    """The tools the table (`aiscientist.agent.toolsets`) gives `role` in this run's arm,
    bound to `scope_role`'s file scope (default: the role's own)."""
    scope = rt.ws.scope(scope_role or role)
    box = Toolbox()
    available = [*file_tools(scope, box, write=True, logs=True), finish_tool(), shell_tool(rt.ws, scope.role, box), *(extra(box) if extra else [])]
    return pick(rt.agent, role, available, box)


def run_loop(rt: RunContext, role: str, system: str, user: str, box: Toolbox, key: str, max_turns: int | None = None) -> tuple[str, bool, int]:
    """(summary, finished, turns) of the kernel's loop for one specialist call.
    BudgetExhausted and ModelUnavailable propagate (the run wraps up, or stops
    resumably); another ModelError ends this call as failed."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    spec = LoopSpec(max_turns=max_turns or rt.config.specialists.max_turns, nudge=lambda: NUDGE, key=f"{key}.t", finish_after_failure=False)
    outcome = kernel_loop(lambda msgs, tools: rt.complete(role, settled(msgs, box.is_effect), tools), box, messages, spec, lambda call, pos: run_tool(rt, box, call, pos))
    if outcome.stop is StopReason.FINISHED:
        return outcome.summary or "(no summary)", True, outcome.turns
    if outcome.stop is StopReason.MODEL_ERROR:
        return f"model error, {role} stopped: {outcome.detail}", False, outcome.turns
    return f"{role} stopped after {outcome.turns} turns without calling finish", False, outcome.turns


def run_tool(rt: RunContext, box: Toolbox, call: ToolCall, key: str) -> str:
    """Run one tool call; effects already done before a resume are answered from the journal."""
    if not box.is_effect(call.name):
        box.current_key = key
        return box.call(call)[0]
    recorded = rt.journal.get(key)
    if recorded is not None and recorded.get("tool") == call.name:
        for artifact in recorded.get("artifacts") or []:
            box.note(artifact)
        return str(recorded["content"])
    before = set(box.artifacts)
    if rt.journal.intent(key) is not None and _append_landed(rt, call):
        content, ok = f"appended to {call.arguments['log']} (before an interruption)", True
    else:
        rt.journal.note_intent(key, call.name)
        box.current_key = key
        content, ok = box.call(call)
    added = [a for a in box.artifacts if a not in before]
    rt.journal.record(key, {"tool": call.name, "content": content, "ok": ok, "artifacts": added})
    return content


def _append_landed(rt: RunContext, call: ToolCall) -> bool:
    """An append_log that was done but not yet journaled when the run was interrupted
    (writes are idempotent, and a repeated edit fails harmlessly)."""
    if call.name != "append_log" or call.error:
        return False
    path = rt.ws.paths.logs / f"{call.arguments.get('log')}.md"
    text = str(call.arguments.get("text", "")).strip()
    return bool(text) and path.is_file() and text in path.read_text(errors="replace")[-len(text) - 200 :]


def read_or_empty(rt: RunContext, role: str, path: str) -> str:
    """A workspace file as `role` may see it; empty when absent or not allowed."""
    from aiscientist.workspace.errors import ToolError

    scope = rt.ws.scope(role)
    if scope.policy.refusal("read", path) is not None:
        return ""  # not this role's to see (File-as-Bus off): no attempt, no denial on record
    try:
        return scope.read(path)
    except (ToolError, OSError):
        return ""


def append_once(rt: RunContext, scope: Any, log: str, marker: str, text: str) -> None:
    """Append `text` (which starts with the unique `marker`) unless the log already has
    it: after an interruption the same entry may be offered again and must not repeat."""
    path = rt.ws.paths.logs / f"{log}.md"
    if path.is_file() and marker in path.read_text(errors="replace"):
        return
    scope.append(log, text)
