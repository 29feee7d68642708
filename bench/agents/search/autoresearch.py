"""`autoresearch`: karpathy/autoresearch's loop on our kernel, with FML-bench main's
defaults. Greedy keep-or-discard (`greedy.replay`): each experiment is one change to the
current best code; it is kept if the metric strictly improves on it and discarded (the
code goes back) otherwise; a crash is debugged by the next experiment until
`max_debug_retries` (3) crashes come in a row. The prompt carries the running log of every
experiment tried, kept or not. The tree record's group of each node says keep, discard or
crash.
"""

from __future__ import annotations

from aiscientist.agent.registry import register_agent
from bench.agents.search import answer
from bench.agents.search.common import Options, Search, SearchAgent
from bench.agents.search.greedy import Chain, log_rows, replay

ROLE = "autoresearch"
INSTRUCTIONS = """
You are an autonomous researcher. Each experiment is ONE change to the current best code;
it is kept if the validation metric improves and reverted otherwise. Use the log of what
was tried to choose the next idea; if recent experiments were discarded or crashed, try a
different direction. All else being equal, simpler is better.
"""
CHANGE_TEXT = "Try one specific, atomic change to the current best code."


class AutoresearchOptions(Options):
    max_debug_retries: int = 3
    log_rows: int = 30


class Autoresearch(SearchAgent):
    name, instructions, options_model = ROLE, INSTRUCTIONS, AutoresearchOptions

    def search(self, run: Search, options: AutoresearchOptions) -> None:
        ctx = run.ctx
        while ctx.steps_left() > 0:
            chain = self._label(run, options)
            run.expand([chain.job(log_rows(run.nodes, chain, options.log_rows), CHANGE_TEXT)])
        self._label(run, options)

    @staticmethod
    def _label(run: Search, options: AutoresearchOptions) -> Chain:
        """Replay the chain and mark each measured node with what it did (the tree's group)."""
        chain = replay(run.nodes, run.fitness, run.start, options.max_debug_retries)
        for node in run.done():
            node.group = chain.labels[node.id]
        run.save()
        return chain


# one answer per experiment: a plan and edit blocks
register_agent(ROLE, Autoresearch, {ROLE: ()}, {ROLE: answer.offline_policy})
