"""The academic-vs-engineering judge of one step's diff against the baseline (as FML-bench's
model judge); an empty diff is engineering without a call.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from aiscientist.agent.tools import tool_schema
from aiscientist.llm.facts import facts_line
from aiscientist.llm.offline import PolicyContext, PolicyReply, register_role_policy
from aiscientist.task import Task
from bench.agents.tools import system_prompt

ROLE = "contribution-judge"
LABELS = ("academic", "engineering")
MAX_DIFF = 12000

INSTRUCTIONS = """
You review one change that a research agent made to a machine-learning codebase,
shown as a unified diff against the baseline code, and classify its contribution.

academic: the change alters the method itself: a new or modified loss or
regulariser, model architecture or layer, training scheme (curriculum, schedule
logic, sampling, augmentation strategy), optimisation algorithm, inference or
evaluation-time procedure, or any new algorithmic component.

engineering: the change only touches hyper-parameter values, constants or flags,
refactoring, logging, input/output, speed or infrastructure, or fixes a bug
without changing what the method does.

A change that mixes both is academic as soon as the method itself changes.
Judge only what the diff does, not what its comments claim. Call `classify` once.
"""


class ClassifyArgs(BaseModel):
    label: Literal["academic", "engineering"] = Field(description="academic or engineering")
    reason: str = Field(description="one sentence")


CLASSIFY = tool_schema("classify", "Record the classification of the change.", ClassifyArgs)


def judge_messages(task: Task, diff: str) -> list[dict[str, str]]:
    shown = diff if len(diff) <= MAX_DIFF else diff[:MAX_DIFF] + "\n[... diff truncated ...]"
    user = (
        f"Task: {task.name}\n{(task.description or '').strip()[:1500]}\n\nDiff against the "
        f"baseline:\n```diff\n{shown}\n```"
    )
    return [system_prompt(ROLE, INSTRUCTIONS), {"role": "user", "content": user + "\n" + facts_line(role=ROLE)}]


def parse_label(completion) -> str | None:
    for call in completion.tool_calls:
        if call.name == "classify" and call.error is None and call.arguments.get("label") in LABELS:
            return call.arguments["label"]
    found = {label for label in LABELS if re.search(rf"\b{label}\b", completion.content or "", re.I)}
    return found.pop() if len(found) == 1 else None


def judge_diff(task: Task, diff: str, model: str, log_dir: Path) -> str:
    """'academic', 'engineering', or 'unjudged' when the model gave no usable answer."""
    if not diff.strip():
        return "engineering"
    from aiscientist.llm import ModelError, make_client

    log_dir.mkdir(parents=True, exist_ok=True)
    cache = log_dir / "verdicts.jsonl"
    key = hashlib.sha256(diff.encode()).hexdigest()
    for line in cache.read_text().splitlines() if cache.is_file() else []:
        entry = json.loads(line)
        if entry["diff_sha256"] == key:
            return entry["label"]
    client = make_client(model, run_dir=log_dir, role=ROLE)
    try:
        label = parse_label(client.complete(judge_messages(task, diff), tools=[CLASSIFY], role=ROLE)) or "unjudged"
    except ModelError:
        label = "unjudged"
    with cache.open("a") as handle:
        handle.write(json.dumps({"diff_sha256": key, "label": label}) + "\n")
    return label


_LITERAL = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:True|False|true|false)\b")


def _changed_lines(diff: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            continue
        code = line[1:].split("#", 1)[0].strip()
        if line.startswith("-") and code:
            removed.append(code)
        elif line.startswith("+") and code:
            added.append(code)
    return removed, added


def offline_label(diff: str) -> tuple[str, str]:
    """Engineering when the changed lines differ only in literals (or comments, blank lines); else academic."""
    removed, added = _changed_lines(diff)
    skeleton = lambda lines: sorted(_LITERAL.sub("<lit>", line) for line in lines)  # noqa: E731
    if skeleton(removed) == skeleton(added):
        return "engineering", "only literal values (constants, flags) changed"
    return "academic", "the structure of the code changed, not only literal values"


def offline_policy(ctx: PolicyContext) -> PolicyReply:
    text = ctx.messages[-1].get("content", "") if ctx.messages else ""
    match = re.search(r"```diff\n(.*)\n```", text, re.S)
    label, reason = offline_label(match.group(1) if match else "")
    return PolicyReply(f"Mechanical diff reading: {reason}.", [("classify", {"label": label, "reason": reason})])


register_role_policy(ROLE, offline_policy, replace=True)  # the offline model can judge wherever the judge is imported
