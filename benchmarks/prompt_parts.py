"""Where a run's prompt tokens go: per role and kind of content (issue #40), from the requests a run
recorded (`python -m aiscientist --record DIR ...`) and its calls log (`logs/llm_calls.jsonl` names the
role of each request hash). Used by `tokens_per_step.py --parts` and `real_model.py`.

Kinds: `system` (the role's instructions), `tools` (the tool schemas, sent apart or, for a model that
reads its tools from the prompt, the block appended to the system prompt), `brief` (the call's first
user message: task, facts, files shown), `file contents` (results of the tools that read files),
`tool results` (the other tools' results), `history` (the model's own earlier replies) and `later user`
(nudges, status and notes after the brief). Each request counts as often as it was sent.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from rich.table import Table

from aiscientist.llm.budget import read_records
from aiscientist.llm.tokens import TokenCounter
from aiscientist.llm.toolcalls.modes import TOOLS_HEADING

PARTS = ("system", "tools", "brief", "file contents", "tool results", "history", "later user")
READERS = ("read_file", "search_files", "list_files", "read_files")
_RESULT = re.compile(r"^Result of (\w+):\n", re.M)  # a tool result folded into a user turn (`prompt` mode)


def roles_of(call_logs: list[Path]) -> dict[str, str]:
    """request hash -> the role that sent it."""
    records = [r for log in call_logs for r in read_records(log)]
    return {r["request_hash"]: r.get("role") or "?" for r in records if "request_hash" in r}


def split(record_dir: Path, call_logs: list[Path], counter: TokenCounter | None = None) -> dict[str, Counter[str]]:
    """role -> kind of content -> prompt tokens, over every recorded request of those runs."""
    counter = counter or TokenCounter()
    roles, by_role = roles_of(call_logs), {}
    for path in sorted(record_dir.glob("*.json")):
        role = roles.get(path.stem)
        if role is None:  # a request of another run recorded in the same folder
            continue
        entry = json.loads(path.read_text())
        sent = max(1, len(entry.get("replies") or []))
        parts = request_parts(entry["request"]["messages"], entry["request"].get("tools") or [], counter)
        total = by_role.setdefault(role, Counter())
        for kind, tokens in parts.items():
            total[kind] += sent * tokens
    return by_role


def request_parts(messages: list[dict[str, Any]], tools: list[dict[str, Any]], counter: TokenCounter) -> Counter[str]:
    """One request's prompt tokens by kind of content."""
    parts: Counter[str] = Counter()
    names = {c.get("id"): c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
    if tools:
        parts["tools"] += counter.tools(tools, any(m.get("role") == "system" for m in messages))
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    for i, m in enumerate(messages):
        text, role = m.get("content") if isinstance(m.get("content"), str) else "", m.get("role")
        if role == "system":
            own, _, block = text.partition(TOOLS_HEADING)
            parts["system"] += counter.text(own)
            parts["tools"] += counter.text(TOOLS_HEADING + block) if block else 0
        elif role == "tool":
            parts[_kind(names.get(m.get("tool_call_id")) or m.get("name") or "")] += counter.message(m)
        elif role == "assistant":
            parts["history"] += counter.message(m)
        elif i == first_user:
            parts.update(_user_parts(text, counter, "brief"))
        else:
            parts.update(_user_parts(text, counter, "later user"))
    return parts


def _kind(tool: str) -> str:
    return "file contents" if tool in READERS else "tool results"


def _user_parts(text: str, counter: TokenCounter, plain: str) -> Counter[str]:
    """A user turn's text: tool results folded into it (`Result of NAME:` blocks) apart from the rest."""
    parts: Counter[str] = Counter()
    pieces = _RESULT.split(text)  # [before, name, body, name, body, ...]
    parts[plain] += counter.text(pieces[0])
    for name, body in zip(pieces[1::2], pieces[2::2]):
        parts[_kind(name)] += counter.text(body)
    return parts


def shares(by_role: dict[str, Counter[str]]) -> list[tuple[str, int, dict[str, float]]]:
    """(role, its prompt tokens, each kind's share of them), the largest role first."""
    rows = []
    for role, parts in by_role.items():
        total = sum(parts.values())
        rows.append((role, total, {k: parts[k] / total if total else 0.0 for k in PARTS}))
    return sorted(rows, key=lambda r: -r[1])


def calls_of(call_logs: list[Path]) -> Counter[str]:
    """role -> answered model calls."""
    return Counter(r.get("role") or "?" for log in call_logs for r in read_records(log) if r.get("outcome") == "ok")


def parts_table(title: str, by_role: dict[str, Counter[str]], calls: Counter[str], steps: int) -> Table:
    """One row per role: calls, prompt tokens (all, per step) and each kind's share."""
    table = Table(title=title)
    for column in ("role", "calls", "prompt tok", "per step", *PARTS):
        table.add_column(column, justify="right")
    everything: Counter[str] = Counter()
    for parts in by_role.values():
        everything.update(parts)
    for role, total, share in [*shares(by_role), *shares({"all roles": everything})]:
        count = sum(calls.values()) if role == "all roles" else calls.get(role, 0)
        table.add_row(
            role, str(count), f"{total:,}", f"{total / max(steps, 1):,.0f}", *(f"{100 * share[k]:.0f}%" for k in PARTS)
        )
    return table
