"""`autoresearch`: karpathy/autoresearch's loop on our kernel. Greedy keep-or-discard:
each experiment is one change to the current best code; it is kept (becomes the current
best) if the metric improves on it and discarded (the code goes back) otherwise. The
prompt carries the running log of every experiment tried, kept or not.
"""

from __future__ import annotations

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.toolsets import register_toolset
from aiscientist.llm.offline import register_role_policy
from bench.agents.search import answer
from bench.agents.search.common import Job, Node, Options, Search

ROLE = "autoresearch"
INSTRUCTIONS = """
You are an autonomous researcher. Each experiment is ONE change to the current best code;
it is kept if the validation metric improves and reverted otherwise. Use the log of what
was tried to choose the next idea.
"""
LOG_ROWS = 30


class AutoresearchOptions(Options):
    log_rows: int = LOG_ROWS


def kept(nodes: list[Node], fitness, start: float) -> list[Node]:
    """The kept chain: each kept node is a child of the one kept before it (the first, of the
    baseline) and beats it; `start` is the baseline's fitness."""
    chain: list[Node] = []
    for node in nodes:
        head = chain[-1] if chain else None
        if node.status == "good" and node.parent == (head.id if head else None):
            if fitness(node) > (fitness(head) if head else start):
                chain.append(node)
    return chain


class Autoresearch:
    name = ROLE
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        options = AutoresearchOptions.of(self.name, ctx.options)
        run = Search(ctx, self.name, ROLE, INSTRUCTIONS)
        baseline = ctx.task.baseline
        start = run.sign * baseline if baseline is not None else float("-inf")
        while ctx.steps_left() > 0:
            chain = self._label(run, start)
            rows = [
                f"{n.id}\t{n.metric if n.metric is not None else 'crash'}\t"
                f"{'keep' if n.group == 'kept' else 'discard'}\t{n.plan.splitlines()[0][:160] if n.plan else ''}"
                for n in run.done()[-options.log_rows :]
            ]
            log = "## Experiment log (node, metric, status, description)\n" + "\n".join(rows) if rows else ""
            head = chain[-1] if chain else None
            run.expand([Job(head, "experiment", None, log, "Try one change to the current best code.")])
        self._label(run, start)
        return Outcome(stop=StopReason.STEP_BUDGET)

    @staticmethod
    def _label(run: Search, start: float) -> list[Node]:
        """Mark each measured node kept or discarded (the tree record shows it as the group)."""
        chain = kept(run.nodes, run.fitness, start)
        for node in run.done():
            node.group = "kept" if node in chain else "discarded"
        run.save()
        return chain


register_toolset(ROLE, {ROLE: ()})  # one answer per experiment: a plan and edit blocks
register_role_policy(ROLE, answer.offline_policy)
