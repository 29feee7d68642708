"""Prompt economy, measured: model tokens per experiment step, per task.

Runs `python -m aiscientist solve TASK --model offline --steps N` (File-as-Bus on,
FML_CPU8_SMOKE=1 so the experiments are quick: metric values change, not what the prompts hold) on
each task, reads the run's `logs/llm_calls.jsonl` and `result.json`, and prints per
task: steps completed, model calls, tokens (prompt + completion, as the client counted
them), tokens per experiment step (the whole run's tokens over its steps), the mean
per step after step 1 (what each further step costs once the task is understood and
planned: the figure a long run tends to), the share of each role, and the goal's
verdict on the whole-run figure.
With --parts it also records every request (`--record`) and splits each role's prompt tokens
by kind of content, with the role of each request hash from the run's calls log: `system` (the role's
instructions), `tools` (the tool schemas, sent apart or appended to the system prompt for a model that
reads its tools from the prompt), `brief` (the call's first user message), `file contents` (results of
the tools that read files), `tool results` (other tools' results), `history` (the model's own earlier
replies), `later user` (nudges, status, notes). Each request counts as often as it was sent.

Goal: <= 15,000 tokens per experiment step on each of the eight FML-CPU-8 tasks.

    python benchmarks/tokens_per_step.py [--steps 4] [--task bench/tasks/causality/task.yaml ...] \
[--parts] [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiscientist.llm.budget import read_records  # noqa: E402
from aiscientist.llm.tokens import TokenCounter  # noqa: E402
from aiscientist.llm.toolcalls.modes import TOOLS_HEADING  # noqa: E402
from aiscientist.records.paths import RunPaths  # noqa: E402

GOAL = 15_000
ROLES = ("orchestrator", "comprehension", "comprehension-reader", "prioritization", "implementation", "experimentation")


PARTS = ("system", "tools", "brief", "file contents", "tool results", "history", "later user")
READERS = ("read_file", "search_files", "list_files", "read_files")
_RESULT = re.compile(r"^Result of (\w+):\n", re.M)  # a tool result folded into a user turn (`prompt` mode)


def run_task(task: Path, run_dir: Path, steps: int, record: Path | None) -> dict:
    """Solve `task` offline and sum what its model calls used."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FML_CPU8_SMOKE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "aiscientist",
        *(["--record", str(record)] if record else []),
        "solve",
        str(task),
        "--model",
        "offline",
        "--steps",
        str(steps),
        "--run-dir",
        str(run_dir),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if not RunPaths(run_dir).result.is_file():  # exit 1 with a result: no step beat the baseline, which is fine here
        raise SystemExit(
            f"{task}: solve failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    result = json.loads(RunPaths(run_dir).result.read_text())
    calls = [r for r in read_records(RunPaths(run_dir).llm_calls) if r.get("outcome") == "ok"]
    by_role: Counter[str] = Counter()
    for r in calls:
        by_role[r["role"]] += r["prompt_tokens"] + r["completion_tokens"]
    tokens = sum(by_role.values())
    steps_done = result["steps_completed"]
    step_tokens = [json.loads(p.read_text())["tokens"] for p in RunPaths(run_dir).step_records()]
    return {
        "task": result["task"],
        "steps": steps_done,
        "calls": len(calls),
        "tokens": tokens,
        "result_tokens": result["tokens"],
        "per_step": tokens / steps_done if steps_done else None,
        "marginal": sum(step_tokens[1:]) / (len(step_tokens) - 1) if len(step_tokens) > 1 else None,
        "by_role": dict(by_role),
        "roles": {role: dict(p) for role, p in split(record, [RunPaths(run_dir).llm_calls]).items()} if record else {},
        "role_calls": dict(calls_of([RunPaths(run_dir).llm_calls])),
    }


def default_tasks() -> list[Path]:
    return sorted((ROOT / "bench" / "tasks").glob("*/task.yaml"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4, help="experiment steps per task (default 4)")
    parser.add_argument(
        "--task", type=Path, action="append", help="a task.yaml (repeatable; default: the eight FML-CPU-8 tasks)"
    )
    parser.add_argument(
        "--parts", action="store_true", help="also split the prompt tokens by kind of content (records the requests)"
    )
    parser.add_argument("--keep", type=Path, help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    tasks = args.task or default_tasks()
    missing = [t for t in tasks if not t.is_file()]
    if missing:
        parser.error(f"no such task file: {', '.join(map(str, missing))}")
    console = Console(width=200)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tokens-per-step-") as tmp:
        base = args.keep or Path(tmp)
        for task in tasks:
            name = task.parent.name
            rows.append(run_task(task, base / name, args.steps, base / f"{name}-requests" if args.parts else None))
            console.print(
                f"{rows[-1]['task']}: {rows[-1]['tokens']:,} tokens over {rows[-1]['steps']} steps", highlight=False
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    report(console, rows, args.steps, args.parts)
    return 0


def report(console: Console, rows: list[dict], steps: int, parts: bool) -> None:
    title = f"Model tokens per experiment step · offline model · File-as-Bus on · {steps} steps · goal <= {GOAL:,}"
    table = Table(title=title)
    for column in ("task", "steps", "calls", "tokens", "tokens/step", "after step 1", *ROLES, "goal"):
        table.add_column(column, justify="right")
    for r in rows:
        shares = [f"{100 * r['by_role'].get(role, 0) / r['tokens']:.0f}%" if r["tokens"] else "-" for role in ROLES]
        met = r["per_step"] is not None and r["per_step"] <= GOAL
        table.add_row(
            r["task"],
            str(r["steps"]),
            str(r["calls"]),
            f"{r['tokens']:,}",
            f"{r['per_step']:,.0f}" if r["per_step"] else "-",
            f"{r['marginal']:,.0f}" if r["marginal"] else "-",
            *shares,
            "met" if met else "NOT met",
        )
    console.print(table)
    if parts:
        roles: dict[str, Counter[str]] = {}
        for r in rows:
            for role, kinds in r["roles"].items():
                roles.setdefault(role, Counter()).update(kinds)
        calls = sum((Counter(r["role_calls"]) for r in rows), Counter())
        steps_run = sum(r["steps"] for r in rows)
        console.print(parts_table("Prompt tokens by role and kind of content (all tasks)", roles, calls, steps_run))
    worst = max((r["per_step"] or float("inf") for r in rows), default=None)
    console.print(
        f"goal <= {GOAL:,} tokens per step on every task: "
        f"{'met' if worst is not None and worst <= GOAL else 'NOT met'} (worst {worst:,.0f})",
        highlight=False,
    )


# ---- where prompt tokens go (also used by real_model.py) ----


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


if __name__ == "__main__":
    sys.exit(main())
