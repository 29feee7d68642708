"""What the tree and population agents share: their nodes, persisted in the run folder
(`RunPaths.agent_state`) and mirrored to the generic tree record the run page draws;
proposing a node (one model call, the edit format of `answer`); measuring it (one counted
step); and expanding several nodes at once.

Resume: a node is saved, with the number of the step that will measure it, before that
step runs. Loading keeps the nodes whose step was recorded (taking the outcome from the
step record) and drops the rest, so a run killed mid-step continues from its last
recorded step with every counted step matched by exactly one node.

Parallel expansion: the model calls of a batch run on a pool no wider than the run's core
set and `sandbox.cpus`; the engine measures one step at a time on the run's one working
tree, so steps are numbered and counted exactly whatever the width.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import stderr_excerpt
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.llm.facts import facts_line, task_facts
from aiscientist.llm.offline import search
from aiscientist.records.paths import SUBMISSION, in_submission, write_atomic
from aiscientist.records.tree import Status, Tree, TreeNode, write_tree
from aiscientist.util.text import quoted
from bench.agents.search.answer import FORMAT, apply_edits
from bench.agents.tools import system_prompt

PLAN_CHARS = 1500
STDERR_CHARS = 1500


class Options(BaseModel):
    """An agent's settings: FML-bench main's defaults, each changeable with `--option <agent>.<key>=value`."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def of(cls, agent: str, options: dict[str, Any]):
        try:
            return cls.model_validate(options)
        except ValidationError as err:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            keys = ", ".join(cls.model_fields)
            raise ValueError(f"bad --option for {agent}: {problems} (its options: {keys})") from None


class SearchNode(BaseModel):
    id: int
    parent: int | None  # None: from the baseline
    operator: str
    group: str | None = None
    plan: str = ""
    files: dict[str, str]  # every editable file, as this node has it
    change: dict[str, Any] | None = None  # the offline policy's CHANGE marker, when it made the change
    step: int | None = None
    metric: float | None = None
    status: Status = "pending"
    error: str | None = None
    depth: int = 0  # debug depth: consecutive debug operators up to this node


class State(BaseModel):
    agent: str
    nodes: list[SearchNode] = []
    data: dict[str, Any] = {}  # what else the agent keeps between steps


@dataclass
class Job:
    parent: SearchNode | None
    operator: str
    group: str | None = None
    context: str = ""  # what the agent shows the model beside the code (memory, top programs, log)
    text: str = ""  # what the operator asks for
    sibling: int = 0  # its place in a parallel batch


class Search:
    def __init__(self, ctx: RunContext, agent: str, role: str, instructions: str):
        self.ctx, self.agent, self.role, self.instructions = ctx, agent, role, instructions
        self.direction = ctx.task.metric.direction if ctx.task.metric else "max"
        self.sign = 1.0 if self.direction == "max" else -1.0
        baseline = ctx.task.baseline
        self.start = self.sign * baseline if baseline is not None else float("-inf")  # the baseline's fitness
        self._lock = threading.RLock()
        ctx.reset_to_baseline()
        self.baseline = {rel: ctx.read_code(rel) for rel in ctx.editable_files()}
        if not self.baseline:
            raise ValueError(f"{agent} needs editable files; the task has none in {SUBMISSION}/")
        self.state = self._load()
        self._next_id = max((n.id for n in self.state.nodes), default=-1) + 1

    # ---- the nodes -----------------------------------------------------------------

    def _load(self) -> State:
        path = self.ctx.ws.paths.agent_state
        if not path.is_file():
            return State(agent=self.agent)
        state = State.model_validate_json(path.read_text())
        records = {r.step: r for r in self.ctx.step_records()}
        kept = []
        for node in state.nodes:
            record = records.get(node.step) if node.step is not None else None
            if record is not None:
                self._settle(node, record)
                kept.append(node)
        state.nodes = kept
        return state

    def save(self) -> None:
        with self._lock:
            paths = self.ctx.ws.paths
            write_atomic(paths.agent_state, self.state.model_dump_json())
            tree = [
                TreeNode(
                    node=n.id,
                    parent=n.parent,
                    operator=n.operator,
                    step=n.step,
                    metric=n.metric,
                    status=n.status,
                    group=n.group,
                )
                for n in self.state.nodes
            ]
            write_tree(paths.root, Tree(agent=self.agent, nodes=tree))

    @property
    def nodes(self) -> list[SearchNode]:
        return self.state.nodes

    def done(self) -> list[SearchNode]:
        return [n for n in self.nodes if n.status != "pending"]

    def good(self) -> list[SearchNode]:
        return [n for n in self.nodes if n.status == "good"]

    def fitness(self, node: SearchNode) -> float:
        """Higher is better whatever the metric's direction."""
        return self.sign * node.metric if node.metric is not None else float("-inf")

    def best(self, among: list[SearchNode] | None = None) -> SearchNode | None:
        return max(
            (n for n in (self.good() if among is None else among) if n.status == "good"), key=self.fitness, default=None
        )

    def best_start(self, among: list[SearchNode] | None = None) -> SearchNode | None:
        """The best node if it beats the baseline; None: start from the baseline."""
        best = self.best(among)
        return best if best is not None and self.fitness(best) > self.start else None

    def by_id(self, node_id: int | None) -> SearchNode | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def children(self, node: SearchNode | None) -> list[SearchNode]:
        return [n for n in self.nodes if n.parent == (node.id if node is not None else None)]

    # ---- proposing and measuring ---------------------------------------------------

    def messages(self, job: Job, node_id: int) -> list[dict[str, Any]]:
        files = job.parent.files if job.parent is not None else self.baseline
        editable = list(files)
        parts = [self.ctx.task.summary(), f"Editable files: {', '.join(editable)}", f"## Operator: {job.operator}"]
        parts += [job.text] if job.text else []
        if job.parent is not None:
            parts.append(
                f"## Parent: node {job.parent.id}, {self._outcome(job.parent)}\n{job.parent.plan[:PLAN_CHARS]}"
            )
            if job.parent.status == "buggy":
                error = quoted(job.parent.error or "unknown error", "experiment error", 1000)
                parts.append(f"## Its error\n{error}\n{stderr_excerpt(self.ctx, job.parent.step, STDERR_CHARS)}")
        parts += [job.context] if job.context else []
        parts += [f"## {rel}\n```\n{text}\n```" for rel, text in files.items()]
        parts.append(f"Steps left: {self.ctx.steps_left()}. Direction: {self.direction}.")
        tries = [[n.change, n.metric if n.status == "good" else None] for n in self.done()]
        facts = task_facts(self.ctx.task, [in_submission(rel) for rel in editable])
        parts.append(
            facts_line(
                role=self.role,
                operator=job.operator,
                node=node_id,
                sibling=job.sibling,
                files=files,
                tries=tries,
                **facts,
            )
        )
        return [system_prompt(self.role, self.instructions + FORMAT), {"role": "user", "content": "\n\n".join(parts)}]

    def propose(self, job: Job) -> SearchNode:
        """One model call; the node it answers, not yet measured."""
        with self._lock:
            node_id, self._next_id = self._next_id, self._next_id + 1
        answer = self.ctx.complete(self.role, self.messages(job, node_id)).content
        base = job.parent.files if job.parent is not None else self.baseline
        files, applied, problems = apply_edits(base, answer)
        plan = answer.split("<<<<<<<", 1)[0].strip()[:PLAN_CHARS] or "(no plan)"
        if not applied:
            problems.append("no edit applied: the parent's code is measured again")
        marker = search.parse_marker(plan)
        return SearchNode(
            id=node_id,
            parent=job.parent.id if job.parent is not None else None,
            operator=job.operator,
            group=job.group,
            plan=plan + "".join(f"\n[{p}]" for p in problems),
            files=files,
            change=marker.__dict__ if marker is not None and applied else None,
            depth=(job.parent.depth + 1) if job.operator == "debug" and job.parent is not None else 0,
        )

    def measure(self, node: SearchNode) -> SearchNode | None:
        """One counted step on the node's code (None: no step was left for it)."""
        with self._lock:
            if self.ctx.steps_left() <= 0:
                return None
            self.ctx.reset_to_baseline()
            for rel, text in node.files.items():
                if text != self.baseline.get(rel):
                    self.ctx.write_code(rel, text)
            node.step, node.status = self.ctx.ws.engine.next_step(), "pending"
            self.nodes.append(node)
            self.save()  # before the step: a resumed run knows which node the step measured
            origin = f"node {node.parent}" if node.parent is not None else "the baseline"
            group = f" [{node.group}]" if node.group else ""
            record = self.ctx.run_step(f"{self.agent} {node.operator}{group} of {origin}: {node.plan[:600]}")
            self._settle(node, record)
            self.save()
            return node

    def expand(self, jobs: list[Job], width: int = 1) -> list[SearchNode]:
        """Propose and measure `jobs` (at most as many as steps are left), `width` at a time."""
        jobs = [replace(job, sibling=i) for i, job in enumerate(jobs[: self.ctx.steps_left()])]
        width = max(1, min(width, len(jobs), self.cores()))
        work: Callable[[Job], SearchNode | None] = lambda job: self.measure(self.propose(job))  # noqa: E731
        if width == 1:
            out = [work(job) for job in jobs]
        else:
            with ThreadPoolExecutor(width, thread_name_prefix=f"{self.agent}-expand") as pool:
                out = list(pool.map(work, jobs))
        return [n for n in out if n is not None]

    def cores(self) -> int:
        cpus = self.ctx.ws.config.sandbox.cpus
        return max(1, min(len(os.sched_getaffinity(0)), int(cpus) if cpus else 1 << 16))

    @staticmethod
    def _settle(node: SearchNode, record: Any) -> None:
        node.step, node.metric, node.error = record.step, record.metric, record.error
        node.status = "good" if record.eligible and record.metric is not None else "buggy"

    def _outcome(self, node: SearchNode) -> str:
        return f"metric {node.metric:.6g}" if node.status == "good" and node.metric is not None else "failed"

    def summary(self, nodes: list[SearchNode], title: str) -> str:
        if not nodes:
            return ""
        lines = [f"- node {n.id} ({n.operator}): {self._outcome(n)}: {n.plan[:200]}" for n in nodes]
        return f"## {title}\n" + "\n".join(lines)


class SearchAgent:
    """A search agent: its name (also its role), options and instructions. `solve` reads the
    options (a bad one fails before any work), opens the search, runs the agent's `search`
    policy, and ends on the spent step budget."""

    name: str
    instructions: str
    options_model: type[Options] = Options
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        options = self.options_model.of(self.name, ctx.options)
        self.search(Search(ctx, self.name, self.name, self.instructions), options)
        return Outcome(stop=StopReason.STEP_BUDGET)

    def search(self, run: Search, options: Any) -> None:
        raise NotImplementedError
