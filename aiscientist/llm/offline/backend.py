"""The `offline` model backend. A policy reads only structures (tool schemas, tool calls and
results, the prompts' facts block, whose `role` picks it; `solo` without one), never prose.
Policies are stateless (messages and seed only), so record/replay and resume see the same
answers. Every reply starts with BANNER.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from aiscientist.llm.facts import read_facts
from aiscientist.llm.messages import request_hash
from aiscientist.llm.types import RawToolCall, Reply
from aiscientist.util.registry import Registry

BANNER = "[offline policy: a deterministic engineering-only baseline, not a researcher]"


@dataclass
class Exchange:
    """One tool call from the conversation and its result (None: none yet)."""

    name: str
    arguments: dict[str, Any]
    result: str | None

    @property
    def failed(self) -> bool:
        """Failed results start with 'Error' (or the wording of a permission error)."""
        head = (self.result or "").lstrip().lower()
        return self.result is None or head.startswith(("error", "permissiondenied", "permission denied", "tool error"))

    @property
    def path(self) -> str:
        return str(self.arguments.get("path", ""))


@dataclass
class PolicyReply:
    content: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class PolicyContext:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    seed: int = 0
    max_steps: int = 5

    @cached_property
    def facts(self) -> dict[str, Any]:
        return read_facts(self.messages)

    @property
    def role(self) -> str:
        return str(self.facts.get("role", "solo"))

    @property
    def args(self) -> dict[str, Any]:
        """The arguments of the call that started this role (a specialist's: the facts' `args`)."""
        return self.facts.get("args") or {}

    @cached_property
    def tool_names(self) -> set[str]:
        return {t["function"]["name"] for t in self.tools}

    @cached_property
    def history(self) -> list[Exchange]:
        results = {m.get("tool_call_id"): text_of(m.get("content")) for m in self.messages if m.get("role") == "tool"}
        out = []
        for m in self.messages:
            for call in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
                fn = call.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                out.append(
                    Exchange(fn.get("name", ""), args if isinstance(args, dict) else {}, results.get(call.get("id")))
                )
        return out

    def calls_to(self, name: str) -> list[Exchange]:
        return [e for e in self.history if e.name == name]

    def rng(self, *salt: Any) -> random.Random:
        return random.Random(f"{self.seed}|{self.role}|{'|'.join(map(str, salt))}")

    def finish(self, summary: str, *before: tuple[str, dict[str, Any]]) -> PolicyReply:
        """`before`'s calls, then the role's closing tool in the same turn."""
        calls = list(before)
        if "finish" in self.tool_names:
            calls.append(("finish", {"summary": summary}))
        elif "submit" in self.tool_names:
            calls.append(("submit", {"reason": summary}))
        return PolicyReply(summary, calls)


Handler = Callable[[PolicyContext], PolicyReply]
POLICIES: Registry[Handler] = Registry("offline policy")  # by role; a role without one gets `solo`'s


def register_role_policy(role: str, handler: Handler, replace: bool = False) -> None:
    POLICIES.register(role, handler, replace)


class OfflineBackend:
    def __init__(self, seed: int = 0, max_steps: int = 5):
        self.seed, self.max_steps = seed, max_steps

    def send(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: list[str] | None = None) -> Reply:
        context = PolicyContext(messages, tools, self.seed, self.max_steps)
        reply = POLICIES.get(context.role if context.role in POLICIES else "solo")(context)
        content = reply.content if BANNER in reply.content else f"{BANNER} {reply.content}".strip()
        stem = request_hash("offline", messages, tools)[:12]
        calls = [
            RawToolCall(id=f"call_{stem}_{i}", name=name, arguments=json.dumps(args, sort_keys=True))
            for i, (name, args) in enumerate(reply.calls)
        ]
        return Reply(content=content, tool_calls=calls, cost=0.0)


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""
