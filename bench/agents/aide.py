"""`aide`: AIDE-style tree search over one target file, with AIDE's defaults: draft from
the baseline until there are 5 drafts; then, with probability 0.5, debug a random buggy
leaf of debug depth at most 3; otherwise improve the best node. Each node is one model
call (a plan and the whole target file) and one step. Unlike AIDE, the metric comes from
the engine, not a second model call. The journal (`RunPaths.agent_state`) lets a run
resume; the run page draws its nodes from the generic tree record (`records.tree`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import BaseModel

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import stderr_excerpt
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.registry import register_agent
from aiscientist.experiment import snapshots
from aiscientist.llm.facts import facts_line, task_facts
from aiscientist.llm.offline import PolicyContext, PolicyReply, search
from aiscientist.records.paths import in_submission, write_atomic
from aiscientist.records.tree import Tree, TreeNode, write_tree
from aiscientist.task import expand_globs
from aiscientist.util.text import quoted
from bench.agents.tools import system_prompt

ROLE = "aide"
TEMPERATURE = 0.5  # aideml's agent.code.temp
NUM_DRAFTS = 5
DEBUG_PROBABILITY = 0.5
MAX_DEBUG_DEPTH = 3
MEMORY_NODES = 10

INSTRUCTIONS = """
You are a Kaggle grandmaster-level ML engineer improving a research codebase.
Each answer is: a short plan (3-6 sentences) followed by ONE markdown code block
with the complete new content of the target file. Only that file changes; every
other file stays as it is. The code is then run with the task's experiment
commands and scored on the validation metric.
"""

ANSWER = (
    "Answer with a plan of 3-6 sentences, then one ```python block holding the complete new {target}: "
    "every line of the file, runnable as it is."
)
STAGE_TEXT = {
    "draft": "Write a new solution: propose a change to the method in the target file, "
    "starting from the baseline version below.",
    "improve": "Improve the solution below (the best found so far). "
    "Make one focused, testable change and say why it should help.",
    "debug": "The solution below failed. Read the error, find the bug and fix it "
    "without otherwise changing the approach.",
}


class AideNode(BaseModel):
    id: int
    parent: int | None
    stage: str
    plan: str
    code: str
    step: int | None = None
    metric: float | None = None
    buggy: bool = True
    error: str | None = None
    debug_depth: int = 0


class AideJournal(BaseModel):
    target: str
    nodes: list[AideNode] = []

    def good(self) -> list[AideNode]:
        return [n for n in self.nodes if not n.buggy and n.metric is not None]

    def best(self, direction: str) -> AideNode | None:
        sign = 1.0 if direction == "max" else -1.0
        return max(self.good(), key=lambda n: sign * n.metric, default=None)  # type: ignore[operator]

    def debuggable(self) -> list[AideNode]:
        parents = {n.parent for n in self.nodes}
        return [n for n in self.nodes if n.buggy and n.id not in parents and n.debug_depth < MAX_DEBUG_DEPTH]


def extract_code(text: str, python: bool = False) -> tuple[str, str | None]:
    """(text before the first fenced block, the code or None): the longest fenced block -
    for a Python target the longest that compiles, if any does. A last fence left open
    (the answer cut at the token limit) counts as a block to its end."""
    blocks = re.findall(r"```[\w+-]*[^\S\n]*\n(.*?)```", text, re.S)
    opened = text.count("```") % 2 == 1 and re.search(r"```[\w+-]*[^\S\n]*\n((?:(?!```).)*)\Z", text, re.S)
    blocks += [opened.group(1)] if opened else []
    blocks = [b for b in blocks if b.strip()]
    if not blocks:
        return text.strip(), None
    plan = text.split("```", 1)[0].strip()
    runnable = [b for b in blocks if _compiles(b)] if python else []
    return plan, max(runnable or blocks, key=len)


def _compiles(code: str) -> bool:
    try:
        compile(code, "<answer>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


class Aide:
    name = "aide"
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        journal = self._load(ctx)
        direction = ctx.task.metric.direction if ctx.task.metric else "max"
        baseline_code = snapshots.text_of(ctx.ws.paths, ctx.ws.engine.BASELINE_TAG, journal.target)
        while ctx.steps_left() > 0:
            rng = ctx.rng
            drafts = sum(n.stage == "draft" for n in journal.nodes)
            best = journal.best(direction)
            debuggable = journal.debuggable()
            if drafts < NUM_DRAFTS or (best is None and not debuggable):
                stage, parent = "draft", None
            elif debuggable and rng.random() < DEBUG_PROBABILITY:
                stage, parent = "debug", rng.choice(debuggable)
            elif best is not None:
                stage, parent = "improve", best
            else:
                stage, parent = "debug", rng.choice(debuggable)
            base_code = parent.code if parent is not None else baseline_code
            answer = ctx.complete(ROLE, self._messages(ctx, journal, stage, parent, base_code, direction)).content
            plan, code = extract_code(answer, python=journal.target.endswith(".py"))
            node = AideNode(
                id=len(journal.nodes),
                parent=parent.id if parent else None,
                stage=stage,
                plan=plan[:2000] or "(no plan)",
                code=code if code is not None else base_code,
                debug_depth=(parent.debug_depth + 1) if stage == "debug" and parent else 0,
            )
            ctx.reset_to_baseline()
            ctx.write_code(journal.target, node.code)
            hypothesis = (
                f"aide {stage}"
                + (f" of node {parent.id}" if parent else "")
                + f": {node.plan[:400]}"
                + ("" if code is not None else " [answer had no code block; parent code re-run]")
            )
            record = ctx.run_step(hypothesis)
            node.step, node.metric, node.error = record.step, record.metric, record.error
            node.buggy = not (record.eligible and record.metric is not None)
            journal.nodes.append(node)
            self._save(ctx, journal)
        return Outcome(stop=StopReason.STEP_BUDGET)

    def _messages(
        self, ctx: RunContext, journal: AideJournal, stage: str, parent: AideNode | None, code: str, direction: str
    ) -> list[dict[str, Any]]:
        # stable first (task, target, stage, the code it starts from, the answer's form), what changes
        # last (memory, the error, the steps left): a prefix cache reuses the rest of the previous request
        parts = [ctx.task.summary(), f"Target file: {journal.target}", f"## Stage: {stage}", STAGE_TEXT[stage]]
        parts.append(f"## Current code of {journal.target}\n```python\n{code}\n```")
        parts.append(ANSWER.format(target=journal.target))
        parts.append(
            facts_line(
                role=ROLE,
                stage=stage,
                steps_left=ctx.steps_left(),
                code=code,
                **task_facts(ctx.task, [in_submission(journal.target)]),
            )
        )
        memory = [n for n in journal.good()][-MEMORY_NODES:]
        if memory and stage != "debug":
            parts.append(
                "## Memory (previous working solutions)\n"
                + "\n".join(f"- node {n.id} ({n.stage}): metric {n.metric:.6g}: {n.plan[:200]}" for n in memory)
            )
        if stage == "debug" and parent is not None:
            parts.append(f"## Error\n{quoted(parent.error or 'unknown error', 'experiment error', 1000)}\n")
            parts.append(stderr_excerpt(ctx, parent.step))
        parts.append(f"Steps left: {ctx.steps_left()}. Direction: {direction}.")
        return [system_prompt(ROLE, INSTRUCTIONS), {"role": "user", "content": "\n\n".join(parts)}]

    @staticmethod
    def _path(ctx: RunContext):
        return ctx.ws.paths.agent_state

    def _load(self, ctx: RunContext) -> AideJournal:
        path = self._path(ctx)
        if path.is_file():
            journal = AideJournal.model_validate_json(path.read_text())
            done = {s.step for s in ctx.step_records()}
            journal.nodes = [n for n in journal.nodes if n.step in done]
            return journal
        files = ctx.editable_files()
        in_task_order = [
            f for pattern in ctx.task.editable for f in expand_globs(ctx.submission, [pattern]) if f in files
        ]
        target = ctx.options.get("target_file") or (in_task_order[0] if in_task_order else None)
        if target is None or target not in files:
            raise ValueError(f"aide needs one editable target file; editable files: {files}")
        return AideJournal(target=target)

    def _save(self, ctx: RunContext, journal: AideJournal) -> None:
        write_atomic(self._path(ctx), json.dumps(journal.model_dump(), indent=1))
        status = {True: "buggy", False: "good"}
        nodes = [
            TreeNode(node=n.id, parent=n.parent, operator=n.stage, step=n.step, metric=n.metric, status=status[n.buggy])
            for n in journal.nodes
        ]
        write_tree(ctx.ws.paths.root, Tree(agent=self.name, nodes=nodes))


def offline_policy(ctx: PolicyContext) -> PolicyReply:
    """Each stage: a blind perturbation of one literal (two for a draft), the whole file back."""
    stage, code = str(ctx.facts.get("stage", "")), ctx.facts.get("code")
    if not isinstance(code, str):
        return PolicyReply("The facts carry no current code to change.")
    rng = ctx.rng(stage, ctx.facts.get("steps_left"), hashlib.sha256(code.encode()).hexdigest()[:16])
    applied = []
    for _ in range(2 if stage == "draft" else 1):
        options = [e for e in search.options_of({"f": code}) if e.key not in {a.key for a in applied}]
        if options:
            edit = rng.choice(options)
            code = code.replace(edit.old, edit.new, 1)
            applied.append(edit)
    what = "; ".join(f"{e.name} {e.before} -> {e.after}" for e in applied) or "no tunable literal found, code unchanged"
    return PolicyReply(f"{stage.capitalize()} by a blind perturbation: {what}.\n\n```python\n{code}\n```")


# one answer per step: a plan and the whole target file
register_agent(ROLE, Aide, {ROLE: ()}, {ROLE: offline_policy}, {ROLE: {"temperature": TEMPERATURE}})
