"""The `offline` model: a deterministic, seeded, non-LLM policy behind the same tools.

The role comes from the first line of the system prompt (`ROLE: <role>`). Modules
register a handler per role with `register_role_policy`; any other role gets
`default_policy`, which only needs the experiment tools. Handlers are stateless:
everything they know is in the messages (tool calls and their results) and the
seed, so record/replay and resume see exactly the same answers.

The policy is honest about what it is: every reply starts with BANNER.
"""

from __future__ import annotations

import json
import random
import re
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

from aiscientist import candidates
from aiscientist.accounting import is_better
from aiscientist.llm.messages import request_hash
from aiscientist.llm.types import RawToolCall, Reply

BANNER = "[offline policy: a deterministic engineering-only baseline, not a researcher]"
NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"


@dataclass
class Exchange:
    """One tool call from the conversation and the result it got (None: none yet)."""

    name: str
    arguments: dict[str, Any]
    result: str | None

    @property
    def failed(self) -> bool:
        return self.result is None or is_error(self.result)


@dataclass
class PolicyReply:
    content: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class PolicyContext:
    role: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    seed: int = 0
    max_steps: int = 5

    @cached_property
    def tool_names(self) -> set[str]:
        return {t["function"]["name"] for t in self.tools}

    @cached_property
    def prompt_text(self) -> str:
        """The system and user messages, which carry the instructions."""
        return "\n".join(_text(m.get("content")) for m in self.messages if m.get("role") in ("system", "user"))

    @cached_property
    def history(self) -> list[Exchange]:
        results = {m.get("tool_call_id"): _text(m.get("content")) for m in self.messages if m.get("role") == "tool"}
        out = []
        for m in self.messages:
            for call in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
                fn = call.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                out.append(Exchange(fn.get("name", ""), args if isinstance(args, dict) else {}, results.get(call.get("id"))))
        return out

    def rng(self, *salt: Any) -> random.Random:
        return random.Random(f"{self.seed}|{self.role}|{'|'.join(map(str, salt))}")

    def finish(self, summary: str) -> PolicyReply:
        """End the loop with whatever closing tool the role has."""
        if "finish" in self.tool_names:
            return PolicyReply(summary, [("finish", {"summary": summary})])
        if "submit" in self.tool_names:
            return PolicyReply(summary, [("submit", {"reason": summary})])
        return PolicyReply(summary)


Handler = Callable[[PolicyContext], PolicyReply]
_POLICIES: dict[str, Handler] = {}
_policies_lock = threading.Lock()


def register_role_policy(role: str, handler: Handler, replace: bool = False) -> None:
    """Answer calls whose system prompt starts with `ROLE: <role>` with `handler`."""
    with _policies_lock:
        if role in _POLICIES and _POLICIES[role] is not handler and not replace:
            raise ValueError(f"an offline policy for role {role!r} is already registered")
        _POLICIES[role] = handler


def role_of(messages: list[dict[str, Any]]) -> str:
    for m in messages:
        if m.get("role") == "system":
            first = _text(m.get("content")).strip().splitlines()[:1]
            match = re.match(r"ROLE:\s*(\S+)", first[0]) if first else None
            return match.group(1) if match else "agent"
    return "agent"


class OfflineBackend:
    def __init__(self, seed: int = 0, max_steps: int = 5):
        self.seed, self.max_steps = seed, max_steps

    def send(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        role = role_of(messages)
        context = PolicyContext(role, messages, tools, self.seed, self.max_steps)
        reply = _POLICIES.get(role, default_policy)(context)
        content = reply.content if BANNER in reply.content else f"{BANNER} {reply.content}".strip()
        stem = request_hash("offline", messages, tools)[:12]
        calls = [
            RawToolCall(id=f"call_{stem}_{i}", name=name, arguments=json.dumps(args, sort_keys=True))
            for i, (name, args) in enumerate(reply.calls)
        ]
        return Reply(content=content, tool_calls=calls, cost=0.0)


# ---- the default policy: one candidate change per experiment -------------------------


def default_policy(ctx: PolicyContext) -> PolicyReply:
    """Read the editable files, then repeatedly: change one tunable literal, run an
    experiment, keep the change if the metric improved (else revert), until the step
    budget in the prompt or `max_steps` is spent; then finish."""
    missing = {"read_file", "edit_file", "run_experiment"} - ctx.tool_names
    if missing:
        return ctx.finish(f"No handler for role {ctx.role} and no {', '.join(sorted(missing))} tool offered; nothing to do.")
    files = editable_files(ctx.prompt_text)
    if not files:
        return ctx.finish("The prompt names no editable files (an 'Editable files:' line of file names); nothing to change.")
    run = _Progress(ctx, files)
    if run.reads:
        return PolicyReply("Reading the editable files.", [("read_file", _read_args(ctx, p)) for p in run.reads])
    if not run.contents:
        return ctx.finish("Could not read any editable file: " + ", ".join(files))
    limit = min(ctx.max_steps, step_budget(ctx.prompt_text) or ctx.max_steps)
    if run.pending is not None:
        edit = run.pending
        hypothesis = f"{BANNER} change {edit.what} in {edit.path} (a blind perturbation, no reasoning behind it)"
        return PolicyReply(f"Running an experiment with {edit.what}.", [("run_experiment", {"hypothesis": hypothesis})])
    if run.revert is not None:
        edit = run.revert
        return PolicyReply(f"Reverting {edit.what}: it did not improve the metric.", [("edit_file", {"path": edit.path, "old": edit.new, "new": edit.old})])
    if len(run.experiments) >= limit or len(ctx.history) > 6 * limit + 2 * len(files) + 4:
        return ctx.finish(run.summary(limit))
    change = run.next_change(ctx.rng("change", len(run.experiments), len(run.tried)))
    if change is None:
        return ctx.finish(run.summary(limit) + " No untried candidate change is left.")
    path, c = change
    found = sorted({f"{p}:{cand.name}" for p, text in run.contents.items() for cand in candidates.find_candidates(text)})
    return PolicyReply(
        f"Step {len(run.experiments) + 1}: changing {c.description} in {path}. "
        f"Candidate literals found without understanding the method: {', '.join(found)}.",
        [("edit_file", {"path": path, "old": c.old, "new": c.new})],
    )


@dataclass(frozen=True)
class _Edit:
    path: str
    old: str
    new: str

    @property
    def what(self) -> str:
        return f"`{self.old.strip()}` -> `{self.new.strip()}`"


@dataclass
class _Experiment:
    edit: _Edit | None
    ok: bool
    metric: float | None


class _Progress:
    """What the conversation so far amounts to, rebuilt from its tool calls."""

    def __init__(self, ctx: PolicyContext, files: list[str]):
        self.contents: dict[str, str] = {}  # path as read -> text with the applied edits
        self.tried: set[_Edit] = set()
        self.experiments: list[_Experiment] = []
        self.pending: _Edit | None = None  # applied, not yet measured
        self.revert: _Edit | None = None  # measured and not better: to undo
        direction = metric_direction(ctx.prompt_text)
        self.best = baseline(ctx.prompt_text)
        failed_reads: set[str] = set()
        for ex in ctx.history:
            path = str(ex.arguments.get("path", ""))
            if ex.name == "read_file":
                if ex.failed:
                    failed_reads.add(path)
                elif int(ex.arguments.get("start_line", 1) or 1) == 1:
                    self.contents[path] = strip_line_numbers(ex.result or "")
            elif ex.name == "edit_file" and path in self.contents:
                edit = _Edit(path, str(ex.arguments.get("old", "")), str(ex.arguments.get("new", "")))
                self.tried.add(edit)
                if ex.failed:
                    continue
                if self.revert is not None and edit == _Edit(path, self.revert.new, self.revert.old):
                    self.revert = None
                else:
                    self.pending = edit
                self.contents[path] = self.contents[path].replace(edit.old, edit.new, 1)
            elif ex.name == "run_experiment":
                ok, metric = experiment_outcome(ex.result or "")
                self.experiments.append(_Experiment(self.pending, ok, metric))
                better = metric is None or self.best is None or direction is None or is_better(metric, self.best, direction)
                if ok and metric is not None and better:
                    self.best = metric
                self.revert = None if ok and better else self.pending
                self.pending = None
        self.reads = []
        for name in files:
            options = [name] if name.startswith("submission/") else [name, f"submission/{name}"]
            if any(o in self.contents for o in options):
                continue
            untried = [o for o in options if o not in failed_reads]
            if untried:
                self.reads.append(untried[0])

    def next_change(self, rng: random.Random) -> tuple[str, candidates.Change] | None:
        options = []
        for path in sorted(self.contents):
            text = self.contents[path]
            for cand in candidates.find_candidates(text):
                change = candidates.perturb(text, cand, rng)
                if change is not None and _Edit(path, change.old, change.new) not in self.tried:
                    options.append((path, change))
        return rng.choice(options) if options else None

    def summary(self, limit: int) -> str:
        lines = [f"{BANNER} Ran {len(self.experiments)} experiment(s) (limit {limit}), one blind change each:"]
        for i, exp in enumerate(self.experiments, start=1):
            what = f"{exp.edit.what} in {exp.edit.path}" if exp.edit else "no change"
            lines.append(f"- {i}: {what}: {'ok' if exp.ok else 'failed'}" + (f", metric {exp.metric:g}" if exp.metric is not None else ""))
        if self.best is not None:
            lines.append(f"Best metric (baseline included): {self.best:g}.")
        return "\n".join(lines)


def _read_args(ctx: PolicyContext, path: str) -> dict[str, Any]:
    schema = next(t["function"].get("parameters", {}) for t in ctx.tools if t["function"]["name"] == "read_file")
    args: dict[str, Any] = {"path": path}
    if "max_lines" in (schema.get("properties") or {}):
        args["max_lines"] = 5000
    return args


# ---- reading prompts and tool results -------------------------------------------------


def is_error(text: str) -> bool:
    """Tool results that report a failure start with 'Error' (tool_error_message does)."""
    head = text.lstrip().lower()
    return head.startswith(("error", "permissiondenied", "permission denied", "tool error"))


def editable_files(prompt: str) -> list[str]:
    """File names on an `Editable files: a.py, b.py` line (patterns are skipped)."""
    names: list[str] = []
    for match in re.finditer(r"^\s*Editable files:\s*(.+)$", prompt, re.M | re.I):
        for item in re.split(r"[,\s]+", match.group(1)):
            item = item.strip("`'\"[]();.")
            if item and item != "none" and not any(ch in item for ch in "*?[") and item not in names:
                names.append(item)
    return names


def step_budget(prompt: str) -> int | None:
    match = re.search(r"(?:step budget|max(?:imum)? (?:experiment )?steps|(?:experiment )?steps? (?:left|remaining))\s*[:=]?\s*(\d+)", prompt, re.I)
    return int(match.group(1)) if match else None


def metric_direction(prompt: str) -> str | None:
    match = re.search(r"Optimi[sz]e\s+\S+\s+\((max|min)\)", prompt) or re.search(r"\b(higher|lower)\b[^.\n]{0,30}\bis better", prompt, re.I)
    if not match:
        return None
    return {"higher": "max", "lower": "min"}.get(match.group(1).lower(), match.group(1))


def baseline(prompt: str) -> float | None:
    match = re.search(rf"Baseline:\s*({NUMBER})", prompt)
    return float(match.group(1)) if match else None


def experiment_outcome(result: str) -> tuple[bool, float | None]:
    """(success, metric) from a run_experiment result: JSON with `success`/`metric`,
    or text with `success: ...` and `metric: ...`."""
    if is_error(result):
        return False, None
    try:
        data = json.loads(result)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        metric = data.get("metric")
        return bool(data.get("success", metric is not None)), float(metric) if isinstance(metric, (int, float)) else None
    ok = re.search(r"\bsuccess\W{0,3}\s*(true|false)", result, re.I)
    metric = re.search(rf"\bmetric\W{{0,3}}\s*({NUMBER})", result, re.I)
    value = float(metric.group(1)) if metric else None
    return (ok.group(1).lower() == "true") if ok else value is not None, value


def strip_line_numbers(text: str) -> str:
    """Undo `  12\\t...` / `12: ...` / `12| ...` line numbering if every line has it."""
    lines = text.splitlines(keepends=True)
    pattern = re.compile(r"^\s*\d+(?:\t|: |\| |:|\|)")
    if lines and all(pattern.match(line) or not line.strip() for line in lines):
        return "".join(pattern.sub("", line, count=1) for line in lines)
    return text


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""
