"""`ai-scientist-v2`: The AI Scientist v2's staged best-first tree search on our kernel,
with FML-bench main's defaults: four stages (initial implementation, baseline tuning,
creative research, ablations) taking int(0.1 / 0.2 / 0.5 / 0.2 x budget) steps (the
remainder to the last), and `num_parallel` 4 nodes selected and expanded at once.
Each stage keeps its own journal and starts from the best node of the stages before it
(the transition rule). Stages 1 and 3 search best-first: drafts first (`num_drafts` 3 in
stage 1, one later), then per node a debug of a buggy leaf (probability `debug_prob`,
debug depth at most `max_debug_depth`) or an improvement of the stage's best working node,
one node per tree of the batch while other trees are viable. Stages 2 and 4 improve the
carried best node only (a stage with nothing carried searches best-first).
"""

from __future__ import annotations

import random

from aiscientist.agent.registry import register_agent
from bench.agents.search import answer
from bench.agents.search.common import Job, Options, Search, SearchAgent, SearchNode

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
    num_drafts: int = 3  # FML-bench: one draft per generated idea (num_ideas 3)
    debug_prob: float = 0.5
    max_debug_depth: int = 3


def stage_budgets(budget: int, shares: tuple[float, ...]) -> list[int]:
    """Steps per stage: int(budget * share) each, the remainder to the last (FML-bench's rule)."""
    out = [int(budget * share) for share in shares]
    out[-1] += budget - sum(out)
    return out


def stage_bounds(budget: int, shares: tuple[float, ...]) -> list[int]:
    """The step count at which each stage ends."""
    bounds, end = [], 0
    for steps in stage_budgets(budget, shares):
        end += steps
        bounds.append(end)
    return bounds


def stage_at(steps_done: int, budget: int, shares: tuple[float, ...]) -> int:
    """The stage the next step belongs to (a stage given no steps is skipped)."""
    return next((i for i, end in enumerate(stage_bounds(budget, shares)) if steps_done < end), len(shares) - 1)


def root_of(run: Search, node: SearchNode) -> int:
    """The id of the node's tree within its stage: its first ancestor of the same stage."""
    while node.parent is not None and (up := run.by_id(node.parent)) is not None and up.group == node.group:
        node = up
    return node.id


def select_batch(run: Search, stage: int, size: int, rng: random.Random, options: V2Options) -> list[Job]:
    """One batch of the stage (FML-bench's simulated parallel selection, see the module)."""
    name = STAGES[stage]
    mine = [n for n in run.nodes if n.group == name]  # each stage keeps its own journal
    carried = run.best([n for n in run.nodes if n.group in STAGES[:stage]])  # the transition rule
    memory = run.summary(sorted(run.good(), key=run.fitness)[-5:], "Best nodes so far")
    text = f"Stage {name}: {STAGE_TEXT[name]}"
    if stage in (1, 3) and carried is not None:
        return [Job(carried, "improve", name, memory, text) for _ in range(size)]
    drafts_wanted = options.num_drafts if stage == 0 else 1
    drafts = sum(1 for n in mine if n.operator == "draft")
    parents = {n.parent for n in run.nodes}
    trees = {root_of(run, n) for n in mine}
    jobs: list[Job] = []
    used: set[int] = set()
    while len(jobs) < size:
        if drafts < drafts_wanted:
            jobs.append(Job(carried, "draft", name, memory, text))
            drafts += 1
            continue
        if rng.random() < options.debug_prob:
            buggy = [
                n for n in mine if n.status == "buggy" and n.id not in parents and n.depth <= options.max_debug_depth
            ]
            buggy = [n for n in buggy if root_of(run, n) not in used]
            if buggy:
                node = rng.choice(buggy)
                used.add(root_of(run, node))
                jobs.append(Job(node, "debug", name, memory, text))
                continue
        good = sorted((n for n in mine if n.status == "good"), key=run.fitness, reverse=True)
        pick = next((n for n in good if root_of(run, n) not in used or len(used) >= len(trees)), None)
        if pick is None:
            jobs.append(Job(carried, "draft", name, memory, text))
            drafts += 1
            continue
        used.add(root_of(run, pick))
        jobs.append(Job(pick, "improve", name, memory, text))
    return jobs


class AIScientistV2(SearchAgent):
    name, instructions, options_model = ROLE, INSTRUCTIONS, V2Options

    def search(self, run: Search, options: V2Options) -> None:
        ctx = run.ctx
        while ctx.steps_left() > 0:
            done = ctx.steps_done()
            stage = stage_at(done, ctx.steps, options.stage_shares)
            room = stage_bounds(ctx.steps, options.stage_shares)[stage] - done
            rng = random.Random(f"{ctx.seed or 0}:{self.name}:{len(run.nodes)}")
            size = max(1, min(options.num_parallel, room))
            run.expand(select_batch(run, stage, size, rng, options), width=options.num_parallel)


# one answer per node: a plan and edit blocks
register_agent(ROLE, AIScientistV2, {ROLE: ()}, {ROLE: answer.offline_policy})
