"""`ai-scientist-v2`: The AI Scientist v2's staged best-first tree search on our kernel,
with FML-bench main's defaults: four stages (initial implementation, baseline tuning,
creative research, ablations) taking 0.1 / 0.2 / 0.5 / 0.2 of the step budget, and
`num_parallel` 4 nodes expanded at once. Within a stage each new node debugs a buggy leaf
(probability `debug_prob`, while its debug depth is below `max_debug_depth`) or refines
the stage's best node (the baseline while no node beats it); the first stage drafts from
the baseline until a node works.
Transition rule: a stage ends when its share of the budget is spent; the next stage
starts from the best node so far (a stage with no working node to start from drafts).
"""

from __future__ import annotations

import random

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.toolsets import register_toolset
from aiscientist.llm.offline import register_role_policy
from bench.agents.search import answer
from bench.agents.search.common import Job, Node, Options, Search

ROLE = "ai-scientist-v2"
INSTRUCTIONS = """
You are an AI scientist running a staged research programme on an ML codebase: first a
working implementation, then tuning the baseline, then creative research ideas, then
ablations of what helped. Each node is one experiment on the editable code.
"""
STAGES = ("initial_implementation", "baseline_tuning", "creative_research", "ablation_studies")
STAGE_TEXT = {
    "initial_implementation": "Get a working implementation of the method that scores on the metric.",
    "baseline_tuning": "Tune the hyper-parameters of the working implementation; change nothing else.",
    "creative_research": "Propose and implement a novel improvement to the method.",
    "ablation_studies": "Ablate one component of the best solution to measure what it contributes.",
}


class V2Options(Options):
    stage_shares: tuple[float, float, float, float] = (0.1, 0.2, 0.5, 0.2)
    num_parallel: int = 4
    debug_prob: float = 0.5
    max_debug_depth: int = 3


def stage_bounds(budget: int, shares: tuple[float, ...]) -> list[int]:
    """The step count at which each stage ends (the last ends at the budget)."""
    total, bounds, used = sum(shares), [], 0.0
    for share in shares:
        used += share
        bounds.append(min(budget, max(bounds[-1] if bounds else 0, round(budget * used / total))))
    bounds[-1] = budget
    return bounds


def stage_at(steps_done: int, budget: int, shares: tuple[float, ...]) -> int:
    """The stage the next step belongs to."""
    return next((i for i, end in enumerate(stage_bounds(budget, shares)) if steps_done < end), len(shares) - 1)


class AIScientistV2:
    name = ROLE
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        options = V2Options.of(self.name, ctx.options)
        run = Search(ctx, self.name, ROLE, INSTRUCTIONS)
        while ctx.steps_left() > 0:
            done = ctx.steps_done()
            index = stage_at(done, ctx.steps, options.stage_shares)
            stage = STAGES[index]
            room = stage_bounds(ctx.steps, options.stage_shares)[index] - done
            rng = random.Random(f"{ctx.seed or 0}:{self.name}:{len(run.nodes)}")
            jobs = [self._job(run, stage, rng, options) for _ in range(max(1, min(options.num_parallel, room)))]
            run.expand(jobs, width=options.num_parallel)
        return Outcome(stop=StopReason.STEP_BUDGET)

    @staticmethod
    def _job(run: Search, stage: str, rng: random.Random, options: V2Options) -> Job:
        mine = [n for n in run.nodes if n.group == stage]
        parents = {n.parent for n in run.nodes}
        buggy = [n for n in mine if n.status == "buggy" and n.id not in parents and n.depth < options.max_debug_depth]
        best = run.best_start(mine) or run.best_start()
        memory = run.summary(sorted(run.good(), key=run.fitness)[-5:], "Best nodes so far")
        parent: Node | None
        if buggy and rng.random() < options.debug_prob:
            operator, parent = "debug", rng.choice(buggy)
        elif best is None and not run.good():
            operator, parent = "draft", None
        else:
            operator, parent = "improve", best
        return Job(parent, operator, stage, memory, f"Stage {stage}: {STAGE_TEXT[stage]}")


register_toolset(ROLE, {ROLE: ()})  # one answer per node: a plan and edit blocks
register_role_policy(ROLE, answer.offline_policy)
