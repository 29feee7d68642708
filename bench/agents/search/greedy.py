"""karpathy/autoresearch's greedy keep-or-discard chain, as FML-bench main runs it (its
Autoresearch agent, and each phase and branch of its AdaptiveSearch).

A chain starts from a head (the baseline, or a node) and its fitness. Each experiment is
one change to the current head: a working node that strictly beats the head becomes the
head (keep); a working node that does not is dropped (discard: the code goes back); a
failed node (crash) is debugged by the next experiment while fewer than
`max_debug_retries` crashes came in a row, after which the idea is dropped and the next
experiment starts from the head again.

The chain is replayed from its nodes in order, so a resumed run sees exactly the chain
the killed one had.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from bench.agents.search.common import Job, SearchNode

Label = Literal["keep", "discard", "crash"]


@dataclass
class Chain:
    head: SearchNode | None  # None: the baseline
    best: float  # the head's fitness
    crashes: int = 0  # crashes in a row since the last working node
    pending: SearchNode | None = None  # a crashed node the next experiment debugs
    labels: dict[int, Label] = field(default_factory=dict)  # node id -> what the chain did with it
    kept: list[SearchNode] = field(default_factory=list)

    def job(self, context: str, text: str, group: str | None = None) -> Job:
        """The chain's next experiment: debug the pending crash, else one change to the head."""
        if self.pending is not None:
            fix = "The last experiment crashed. If it is a simple fix, fix it and keep the intended change; "
            return Job(self.pending, "debug", group, context, fix + "if the idea is broken, simplify it.")
        return Job(self.head, "experiment", group, context, text)


def replay(
    nodes: list[SearchNode],
    fitness: Callable[[SearchNode], float],
    start: float,
    max_debug_retries: int,
    head: SearchNode | None = None,
) -> Chain:
    """The chain after `nodes` (measured, in the order they ran), from `head` at fitness `start`."""
    chain = Chain(head=head, best=start)
    for node in nodes:
        if node.status == "pending":
            continue
        if node.status == "good":
            chain.crashes, chain.pending = 0, None
            if fitness(node) > chain.best:
                chain.head, chain.best = node, fitness(node)
                chain.labels[node.id] = "keep"
                chain.kept.append(node)
            else:
                chain.labels[node.id] = "discard"
            continue
        chain.labels[node.id] = "crash"
        chain.crashes += 1
        if chain.crashes < max_debug_retries:
            chain.pending = node
        else:
            chain.crashes, chain.pending = 0, None
    return chain


def log_rows(nodes: list[SearchNode], chain: Chain, rows: int) -> str:
    """autoresearch's results log: node, metric, status, description."""
    lines = [
        f"{n.id}\t{n.metric if n.metric is not None else 'crash'}\t{chain.labels.get(n.id, 'pending')}\t"
        f"{n.plan.splitlines()[0][:160] if n.plan else ''}"
        for n in nodes[-rows:]
        if n.status != "pending"
    ]
    return "## Experiment log (node, metric, status, description)\n" + "\n".join(lines) if lines else ""
