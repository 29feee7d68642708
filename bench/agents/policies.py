"""Offline (`--model offline`) policies for the baseline agents' roles.

Deterministic, seeded, non-LLM stand-ins that read the same prompts and tool
results a real model gets and answer in the same format, so every baseline runs
end to end without a model. Their changes are blind perturbations of numeric
constants and flags (`aiscientist.candidates`), shaped by each agent's own loop:
AIDE's drafts/improvements/debugs, The AI Scientist's ideas and runs, a linear
track, PaperBench's bash-driven agents. They are engineering-only baselines and
say so (the client prefixes every reply with the offline banner).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from aiscientist import candidates
from aiscientist.llm import PolicyContext, PolicyReply, register_role_policy

from bench.agents import contribution_judge

HEREDOC = "AISCI_EOF"


def _changes(text: str, rng, n: int, name: str | None = None) -> tuple[str, list[candidates.Change]]:
    """Apply up to `n` blind changes (to candidate `name` only, if given)."""
    pool = candidates.find_candidates(text)
    if name is not None:
        pool = [c for c in pool if c.name == name]
    rng.shuffle(pool)
    applied: list[candidates.Change] = []
    for cand in pool:
        if len(applied) == n:
            break
        current = candidates.find_candidates(text)
        match = next((c for c in current if (c.name, c.line) == (cand.name, cand.line)), None)
        change = candidates.perturb(text, match, rng) if match else None
        if change is not None:
            text = text.replace(change.old, change.new, 1)
            applied.append(change)
    return text, applied


# ---- aide ---------------------------------------------------------------------------


def aide_policy(ctx: PolicyContext) -> PolicyReply:
    prompt = ctx.prompt_text
    stage = re.search(r"^## Stage: (\w+)", prompt, re.M)
    code = re.search(r"^## Current code of (\S+)\n```python\n(.*)\n```", prompt, re.M | re.S)
    if not stage or not code:
        return PolicyReply("I cannot find the stage and the current code in the prompt.")
    stage_name, source = stage.group(1), code.group(2)
    rng = ctx.rng(stage_name, hashlib.sha256(prompt.encode()).hexdigest()[:16])
    new, applied = _changes(source, rng, 2 if stage_name == "draft" else 1)
    what = "; ".join(c.description for c in applied) or "no tunable literal found, code unchanged"
    plan = f"{stage_name.capitalize()} by a blind perturbation: {what}."
    return PolicyReply(f"{plan}\n\n```python\n{new}\n```")


# ---- ai-scientist -------------------------------------------------------------------


def ai_scientist_policy(ctx: PolicyContext) -> PolicyReply:
    return _coder(ctx) if ctx.tools else _ideas(ctx)


def _ideas(ctx: PolicyContext) -> PolicyReply:
    prompt = ctx.prompt_text
    tried = set(re.findall(r"^- (.+)$", prompt.split("## Ideas already tried", 1)[-1], re.M))
    asked = re.search(r"Propose (\d+) new ideas", prompt)
    wanted = int(asked.group(1)) if asked else 5
    ideas = []
    for path, body in re.findall(r"^### (\S+)\n```python\n(.*?)\n```", prompt, re.M | re.S):
        for cand in candidates.find_candidates(body):
            title = f"tune {cand.name} in {path}"
            if title not in tried and all(i["title"] != title for i in ideas):
                ideas.append({"name": f"tune_{cand.name}".lower(), "title": title, "experiment": f"Vary {cand.name} (now {cand.value}) in {path} and keep the best value."})
    rng = ctx.rng("ideas", len(tried))
    rng.shuffle(ideas)
    if not ideas:  # every literal has had its idea: revisit some
        return PolicyReply("No untried candidate left.\n```json\n[]\n```")
    return PolicyReply("Ideas (blind tuning of literals):\n```json\n" + json.dumps(ideas[:wanted], indent=1) + "\n```")


def _coder(ctx: PolicyContext) -> PolicyReply:
    idea = re.search(r"^## Idea: tune (\S+) in (\S+)", ctx.prompt_text, re.M)
    if not idea:
        return ctx.finish("The idea names no literal to tune; nothing changed.")
    name, path = idea.groups()
    history = ctx.history
    reads = [ex for ex in history if ex.name == "read_file" and not ex.failed]
    if not reads:
        return PolicyReply(f"Reading {path}.", [("read_file", {"path": path, "max_lines": 5000})])
    if any(ex.name == "edit_file" for ex in history):
        return ctx.finish(f"Changed {name} in {path}.")
    rng = ctx.rng("code", ctx.prompt_text.count("\nrun "), "fix" in ctx.prompt_text)
    source = reads[-1].result or ""
    _, applied = _changes(source, rng, 1, name)
    if not applied:
        return ctx.finish(f"{name} is no longer a tunable literal in {path}; nothing changed.")
    change = applied[0]
    return PolicyReply(f"Changing {change.description}.", [("edit_file", {"path": path, "old": change.old, "new": change.new})])


# ---- linear, basic, iterative: one conversation --------------------------------------


def _paths(prompt: str) -> list[str]:
    match = re.search(r"^Run folder paths of the editable files: (.+)$", prompt, re.M)
    return [p.strip() for p in match.group(1).split(",")] if match else []


def _track(ctx: PolicyContext, read_tool: str) -> tuple[dict[str, str], Any]:
    """Current content of each file seen in the visible history, and the last exchange."""
    contents: dict[str, str] = {}
    for ex in ctx.history:
        if ex.name == read_tool and not ex.failed and int(ex.arguments.get("start", ex.arguments.get("start_line", 1)) or 1) == 1:
            contents[str(ex.arguments.get("path"))] = ex.result or ""
        elif ex.name == "edit_file" and not ex.failed and str(ex.arguments.get("path")) in contents:
            path = str(ex.arguments["path"])
            contents[path] = contents[path].replace(str(ex.arguments.get("old")), str(ex.arguments.get("new")), 1)
        elif ex.name == "bash" and not ex.failed and (ex.result or "").startswith("[exit 0]"):
            match = re.match(rf"cat > (\S+) <<'{HEREDOC}'\n(.*)\n{HEREDOC}$", str(ex.arguments.get("command", "")), re.S)
            if match and f"submission/{match.group(1)}" in contents:
                contents[f"submission/{match.group(1)}"] = match.group(2) + "\n"
    return contents, (ctx.history[-1] if ctx.history else None)


def _single_track(ctx: PolicyContext, read_tool: str, write_with_bash: bool) -> PolicyReply:
    paths = _paths(ctx.prompt_text)
    if not paths:  # a paper task: this policy cannot write a reproduction, only run what is there
        ran = any(ex.name == "run_experiment" for ex in ctx.history)
        if ran and "submit" in ctx.tool_names:
            return PolicyReply("Nothing more the offline policy can do for a paper task.", [("submit", {"reason": "offline policy: no reproduction written"})])
        return PolicyReply("Running the task's commands on the submission as it is.", [("run_experiment", {"hypothesis": "offline policy: run the submission unchanged"})])
    contents, last = _track(ctx, read_tool)
    unread = [p for p in paths if p not in contents]
    if unread:
        args = {"path": unread[0], "start": 1, "n": 5000} if read_tool == "read_file_chunk" else {"path": unread[0], "max_lines": 5000}
        return PolicyReply(f"Reading {unread[0]}.", [(read_tool, args)])
    edited = last is not None and not last.failed and (last.name == "edit_file" or (last.name == "bash" and (last.result or "").startswith("[exit 0]")))
    if edited:
        return PolicyReply("Measuring the change.", [("run_experiment", {"hypothesis": f"offline blind change: {_describe(last)}"})])
    experiments = sum(ex.name == "run_experiment" for ex in ctx.history)
    rng = ctx.rng("edit", len(ctx.history), experiments)
    order = list(paths)
    rng.shuffle(order)
    for path in order:
        new, applied = _changes(contents[path], rng, 1)
        if applied:
            change = applied[0]
            if write_with_bash:
                rel = path.removeprefix("submission/")
                body = new[:-1] if new.endswith("\n") else new
                return PolicyReply(f"Changing {change.description} in {rel}.", [("bash", {"command": f"cat > {rel} <<'{HEREDOC}'\n{body}\n{HEREDOC}"})])
            return PolicyReply(f"Changing {change.description} in {path}.", [("edit_file", {"path": path, "old": change.old, "new": change.new})])
    return ctx.finish("No tunable literal left to change.")


def _describe(edit: Any) -> str:
    if edit.name == "edit_file":
        return f"`{str(edit.arguments.get('old', '')).strip()}` -> `{str(edit.arguments.get('new', '')).strip()}` in {edit.arguments.get('path')}"
    return "rewrote " + str(edit.arguments.get("command", "")).split(" <<", 1)[0].removeprefix("cat > ")


def linear_policy(ctx: PolicyContext) -> PolicyReply:
    return _single_track(ctx, "read_file", write_with_bash=False)


def bash_agent_policy(ctx: PolicyContext) -> PolicyReply:
    return _single_track(ctx, "read_file_chunk", write_with_bash=True)


ROLE_POLICIES = {
    "aide": aide_policy,
    "ai-scientist": ai_scientist_policy,
    "linear": linear_policy,
    "basic": bash_agent_policy,
    "iterative": bash_agent_policy,
    contribution_judge.ROLE: contribution_judge.offline_policy,
}


def register() -> None:
    for role, handler in ROLE_POLICIES.items():
        register_role_policy(role, handler, replace=True)

