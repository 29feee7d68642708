"""`aira-mcts`: aira-dojo's MCTS solver on our kernel, with FML-bench main's defaults.

Selection walks down from the root (the baseline) by UCT, `q + uct_c * sqrt(ln N / n)`,
an unvisited child first, until it reaches a node with fewer than `num_children`
children that can still be expanded. The root is expanded by drafts (a new approach from
the baseline), a working node by improve, a buggy node by debug while its debug depth is
below `max_debug_depth`. A node's value is its metric normalised between the global min
and max of the metrics found so far (0.5 while they are equal; a failure: 0); values are back-propagated along the
path: a node's q is the mean value of its subtree, its visits the size of its subtree.
The children of one expansion run concurrently (`Search.expand`).
"""

from __future__ import annotations

import math

from aiscientist.agent.registry import register_agent
from bench.agents.search import answer
from bench.agents.search.common import Job, Options, Search, SearchAgent, SearchNode

ROLE = "aira-mcts"
INSTRUCTIONS = """
You are an expert ML research engineer searching a tree of solutions to a research task.
Each node is one version of the editable code, run and scored on the validation metric.
"""
OPERATOR_TEXT = {
    "draft": "Draft a new approach: change the method, starting from the baseline code below.",
    "improve": "Improve this working solution with one focused change that should raise its score.",
    "debug": "This solution failed. Find the bug from the error and fix it; keep the approach.",
}


class AiraOptions(Options):
    uct_c: float = 1.41
    num_children: int = 2
    max_debug_depth: int = 3


class UctTree:
    """UCT statistics recomputed from the nodes (so a resumed run sees the same tree)."""

    def __init__(self, nodes: list[SearchNode], sign: float, options: AiraOptions):
        self.nodes, self.options = nodes, options
        self.kids: dict[int | None, list[SearchNode]] = {}
        for n in nodes:
            self.kids.setdefault(n.parent, []).append(n)
        scores = [sign * n.metric for n in nodes if n.status == "good" and n.metric is not None]
        low, high = min(scores, default=0.0), max(scores, default=0.0)
        self.value = {
            n.id: ((sign * n.metric - low) / (high - low) if high > low else 0.5)
            if n.status == "good" and n.metric is not None
            else 0.0
            for n in nodes
            if n.status != "pending"
        }
        self.visits: dict[int | None, int] = {}
        self.total: dict[int | None, float] = {}
        by_id = {n.id: n for n in nodes}
        for n in nodes:
            if n.id not in self.value:
                continue
            at: int | None = n.id
            while True:  # back-propagate along the path to the root
                self.visits[at] = self.visits.get(at, 0) + 1
                self.total[at] = self.total.get(at, 0.0) + self.value[n.id]
                if at is None:
                    break
                at = by_id[at].parent

    def q(self, node_id: int) -> float:
        return self.total.get(node_id, 0.0) / self.visits[node_id] if self.visits.get(node_id) else 0.0

    def uct(self, parent: int | None, child: SearchNode) -> float:
        n = self.visits.get(child.id, 0)
        if n == 0:
            return math.inf  # an unvisited child first
        return self.q(child.id) + self.options.uct_c * math.sqrt(math.log(max(1, self.visits.get(parent, 1))) / n)

    def operator(self, node: SearchNode | None) -> str | None:
        """How `node` is expanded (None: it cannot be)."""
        if node is None:
            return "draft"
        if node.status == "good":
            return "improve"
        if node.status == "buggy" and node.depth < self.options.max_debug_depth:
            return "debug"
        return None

    def open(self, node: SearchNode | None) -> bool:
        """Whether `node` or a node below it can still be expanded."""
        if (
            self.operator(node) is not None
            and len(self.kids.get(node.id if node else None, [])) < self.options.num_children
        ):
            return True
        return any(self.open(k) for k in self.kids.get(node.id if node else None, []) if k.status != "pending")

    def select(self) -> SearchNode | None | bool:
        """The node to expand (None: the root), or False when the whole tree is closed."""
        node: SearchNode | None = None
        while True:
            key = node.id if node else None
            kids = self.kids.get(key, [])
            if self.operator(node) is not None and len(kids) < self.options.num_children:
                return node
            choices = [k for k in kids if k.status != "pending" and self.open(k)]
            if not choices:
                return False
            node = max(choices, key=lambda k: (self.uct(key, k), -k.id))


class AiraMcts(SearchAgent):
    name, instructions, options_model = ROLE, INSTRUCTIONS, AiraOptions

    def search(self, run: Search, options: AiraOptions) -> None:
        ctx = run.ctx
        while ctx.steps_left() > 0:
            tree = UctTree(run.nodes, run.sign, options)
            parent = tree.select()
            if parent is False:  # every branch is closed: widen the root
                parent = None
            operator = tree.operator(parent) or "draft"
            count = max(1, options.num_children - len(tree.kids.get(parent.id if parent else None, [])))
            memory = run.summary(run.good()[-5:], "Working solutions so far") if operator != "debug" else ""
            job = Job(parent, operator, context=memory, text=OPERATOR_TEXT[operator])
            run.expand([job] * count, width=count)


register_agent(ROLE, AiraMcts, {ROLE: ()}, {ROLE: answer.offline_policy})  # one answer per node: a plan, edits
