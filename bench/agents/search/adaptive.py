"""`adaptive-search`: FML-bench's own AdaptiveSearch on our kernel. Two phases over the
step budget: broad exploration (the first `explore_share`), then exploitation. Both are
steered by code embeddings of the earlier attempts: exploring starts from the baseline or
from the working attempt farthest from the others in embedding space (most novel) and is
told what was tried, to go elsewhere; exploiting starts from the best attempt (the baseline while none
beats it) and is
shown the attempts nearest to it with their metrics. FML-bench embeds code with
GraphCodeBERT; we use the bundled all-MiniLM-L6-v2 (`bench.scoring.embed`, option
`embedder`), so distances differ from FML-bench's.
"""

from __future__ import annotations

import random

import numpy as np

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.toolsets import register_toolset
from aiscientist.llm.offline import register_role_policy
from bench.agents.search import answer
from bench.agents.search.common import Job, Node, Options, Search

ROLE = "adaptive-search"
INSTRUCTIONS = """
You are an ML research agent. Early on, explore broadly: try approaches unlike the ones
already tried. Later, exploit: refine the best approach found.
"""


class AdaptiveOptions(Options):
    explore_share: float = 0.5
    neighbours: int = 3
    embedder: str = "minilm"


def phase_at(steps_done: int, budget: int, share: float) -> str:
    return "explore" if steps_done < round(budget * share) else "exploit"


def most_novel(vectors: dict[int, np.ndarray], candidates: list[Node]) -> Node | None:
    """The candidate whose code is farthest (mean cosine distance) from all other attempts."""

    def novelty(node: Node) -> float:
        others = [v for k, v in vectors.items() if k != node.id]
        return float(np.mean([_distance(vectors[node.id], v) for v in others])) if others else 0.0

    return max(candidates, key=lambda n: (novelty(n), -n.id), default=None)


def nearest(vectors: dict[int, np.ndarray], to: Node, among: list[Node], k: int) -> list[Node]:
    return sorted((n for n in among if n.id != to.id), key=lambda n: _distance(vectors[to.id], vectors[n.id]))[:k]


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return 1.0 - float(a @ b) / norm if norm else 1.0


class AdaptiveSearch:
    name = ROLE
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        from bench.scoring.embed import get_embedder  # loads torch: only when the agent runs

        options = AdaptiveOptions.of(self.name, ctx.options)
        run = Search(ctx, self.name, ROLE, INSTRUCTIONS)
        embedder = get_embedder(options.embedder)
        while ctx.steps_left() > 0:
            phase = phase_at(ctx.steps_done(), ctx.steps, options.explore_share)
            done = run.done()
            vectors = {n.id: embedder.embed("\n".join(n.files.values())) for n in done}
            rng = random.Random(f"{ctx.seed or 0}:{self.name}:{len(run.nodes)}")
            if phase == "explore":
                parent = most_novel(vectors, run.good()) if run.good() and rng.random() < 0.5 else None
                context = run.summary(done[-10:], "Attempts so far (try something different)")
                text = "Explore: propose an approach unlike the attempts so far."
            else:
                parent = run.best_start()
                near = nearest(vectors, parent, done, options.neighbours) if parent is not None else []
                context = run.summary(near, "The attempts nearest to the best (by code embedding)")
                text = "Exploit: refine the best approach with one focused change."
            run.expand([Job(parent, phase, phase, context, text)])
        return Outcome(stop=StopReason.STEP_BUDGET)


register_toolset(ROLE, {ROLE: ()})  # one answer per attempt: a plan and edit blocks
register_role_policy(ROLE, answer.offline_policy)
