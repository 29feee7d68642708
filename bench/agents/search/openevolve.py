"""`openevolve`: OpenEvolve's MAP-Elites islands on our kernel, with FML-bench main's
defaults: 3 islands, one generation per island in turn, migration every 10 generations
over a ring (an island's best program joins the next island), an archive of the 30 best
programs. A parent is sampled from the island: exploration (0.2, any program), exploitation
(0.7, from the archive's elites) or else weighted by fitness rank. The prompt carries the
parent's metrics, the top programs and inspirations; changes are edit blocks over every
editable file. Each island keeps a MAP-Elites grid over (code size, distance from the
baseline): a cell holds the better of the programs that fall in it.
"""

from __future__ import annotations

import difflib
import random

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.toolsets import register_toolset
from aiscientist.llm.offline import register_role_policy
from bench.agents.search import answer
from bench.agents.search.common import Job, Node, Options, Search

ROLE = "openevolve"
INSTRUCTIONS = """
You are evolving a research program. Propose an improvement to the parent program
below, guided by its metrics, the top programs and the inspirations; keep what works.
"""
BINS = 10


class EvolveOptions(Options):
    num_islands: int = 3
    migration_interval: int = 10
    archive_size: int = 30
    exploration_ratio: float = 0.2
    exploitation_ratio: float = 0.7
    num_top_programs: int = 3
    num_inspirations: int = 2


def cell(node: Node, baseline: dict[str, str]) -> tuple[int, int]:
    """The node's MAP-Elites cell: code size and changed lines against the baseline, in BINS bins."""
    size = sum(len(t) for t in node.files.values())
    changed = sum(
        sum(1 for d in difflib.ndiff(baseline.get(p, "").splitlines(), t.splitlines()) if d[:1] in "+-")
        for p, t in node.files.items()
    )
    base = max(1, sum(len(t) for t in baseline.values()))
    return min(BINS - 1, int(BINS * size / (2 * base))), min(BINS - 1, changed)


def elites(nodes: list[Node], baseline: dict[str, str], fitness) -> dict[tuple[int, int], Node]:
    """MAP-Elites: each cell keeps its best working program (the earlier on a tie)."""
    grid: dict[tuple[int, int], Node] = {}
    for node in nodes:
        if node.status != "good":
            continue
        key = cell(node, baseline)
        if key not in grid or fitness(node) > fitness(grid[key]):
            grid[key] = node
    return grid


def island_of(generation: int, islands: int) -> int:
    return generation % islands


def members(nodes: list[Node], island: int, options: EvolveOptions, fitness) -> list[Node]:
    """The island's own programs plus the migrants it received over the ring."""
    own = [n for n in nodes if n.group == f"island {island}"]
    source = (island - 1) % options.num_islands
    rounds = len(nodes) // (options.num_islands * options.migration_interval)
    migrants: list[Node] = []
    for r in range(1, rounds + 1):  # at each migration, the source island's best so far moves over
        cut = r * options.num_islands * options.migration_interval
        pool = [n for n in nodes[:cut] if n.group == f"island {source}" and n.status == "good"]
        best = max(pool, key=fitness, default=None)
        if best is not None and best not in own and best not in migrants:
            migrants.append(best)
    return own + migrants


def sample_parent(
    population: list[Node], archive: list[Node], rng: random.Random, options: EvolveOptions, fitness
) -> Node | None:
    working = [n for n in population if n.status == "good"]
    if not working:
        return None
    roll = rng.random()
    if roll < options.exploration_ratio:
        return rng.choice(working)
    if roll < options.exploration_ratio + options.exploitation_ratio:
        elite = [n for n in archive if n in working]
        return rng.choice(elite or working)
    ranked = sorted(working, key=fitness)
    return rng.choices(ranked, weights=range(1, len(ranked) + 1))[0]


class OpenEvolve:
    name = ROLE
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        options = EvolveOptions.of(self.name, ctx.options)
        run = Search(ctx, self.name, ROLE, INSTRUCTIONS)
        while ctx.steps_left() > 0:
            generation = len(run.nodes)
            island = island_of(generation, options.num_islands)
            population = members(run.nodes, island, options, run.fitness)
            grid = elites(population, run.baseline, run.fitness)
            archive = sorted(grid.values(), key=run.fitness, reverse=True)[: options.archive_size]
            rng = random.Random(f"{ctx.seed or 0}:{self.name}:{generation}")
            parent = sample_parent(population, archive, rng, options, run.fitness)
            top = sorted(run.good(), key=run.fitness, reverse=True)[: options.num_top_programs]
            others = [n for n in population if n not in top and n is not parent]
            inspirations = rng.sample(others, min(options.num_inspirations, len(others)))
            context = "\n\n".join(
                filter(None, [run.summary(top, "Top programs"), run.summary(inspirations, "Inspirations")])
            )
            text = "Mutate the parent program." if parent else "Evolve the initial program below."
            run.expand([Job(parent, "mutate", f"island {island}", context, text)])
        return Outcome(stop=StopReason.STEP_BUDGET)


register_toolset(ROLE, {ROLE: ()})  # one answer per program: a plan and edit blocks
register_role_policy(ROLE, answer.offline_policy)
