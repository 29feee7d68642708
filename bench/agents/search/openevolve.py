"""`openevolve`: OpenEvolve's MAP-Elites islands on our kernel, with FML-bench main's
defaults: 3 islands, one generation per island in turn, migration every 10 generations
per island over a bidirectional ring (each island's top `migration_rate` share of its own
programs, at least one, joins both neighbours), an archive of the 30 best programs.
A parent is sampled from the island: exploration (0.2, any program), exploitation (0.7,
from the archive's elites) or else weighted by fitness rank; a failed parent is debugged
with probability `debug_prob` 0.3 while its debug depth is below `max_debug_depth` 2, and
mutated otherwise. The prompt carries the parent's metrics, the top programs and
inspirations; changes are edit blocks over every editable file. Each island keeps a
MAP-Elites grid of `feature_bins` 5 x 5 over code size and changed lines against the
baseline, each min-max scaled over the island: a cell holds the better of its programs.
"""

from __future__ import annotations

import difflib
import random

from aiscientist.agent.registry import register_agent
from bench.agents.search import answer
from bench.agents.search.common import Job, Options, Search, SearchAgent, SearchNode

ROLE = "openevolve"
TEMPERATURE = 0.7  # openevolve's LLMConfig default
INSTRUCTIONS = """
You are evolving a research program. Propose an improvement to the parent program
below, guided by its metrics, the top programs and the inspirations; keep what works.
"""


class EvolveOptions(Options):
    num_islands: int = 3
    migration_interval: int = 10
    archive_size: int = 30
    exploration_ratio: float = 0.2
    exploitation_ratio: float = 0.7
    num_top_programs: int = 3
    num_inspirations: int = 3
    feature_bins: int = 5
    migration_rate: float = 0.1
    debug_prob: float = 0.3
    max_debug_depth: int = 2


def features(node: SearchNode, baseline: dict[str, str]) -> tuple[int, int]:
    """Code size and lines changed against the baseline."""
    size = sum(len(t) for t in node.files.values())
    changed = sum(
        sum(1 for d in difflib.ndiff(baseline.get(p, "").splitlines(), t.splitlines()) if d[:1] in "+-")
        for p, t in node.files.items()
    )
    return size, changed


def elites(
    nodes: list[SearchNode], baseline: dict[str, str], fitness, bins: int = 5
) -> dict[tuple[int, int], SearchNode]:
    """MAP-Elites: each cell (features min-max scaled over `nodes`, `bins` per axis) keeps its
    best working program (the earlier on a tie)."""
    coords = {n.id: features(n, baseline) for n in nodes}
    lows = [min((c[i] for c in coords.values()), default=0) for i in range(2)]
    highs = [max((c[i] for c in coords.values()), default=0) for i in range(2)]

    def scaled(value: int, i: int) -> int:
        share = (value - lows[i]) / (highs[i] - lows[i]) if highs[i] > lows[i] else 0.5
        return min(bins - 1, int(share * bins))

    grid: dict[tuple[int, int], SearchNode] = {}
    for node in nodes:
        if node.status != "good":
            continue
        key = (scaled(coords[node.id][0], 0), scaled(coords[node.id][1], 1))
        if key not in grid or fitness(node) > fitness(grid[key]):
            grid[key] = node
    return grid


def island_of(generation: int, islands: int) -> int:
    return generation % islands


def members(nodes: list[SearchNode], island: int, options: EvolveOptions, fitness) -> list[SearchNode]:
    """The island's own programs plus the migrants it received from both ring neighbours."""
    own = [n for n in nodes if n.group == f"island {island}"]
    rounds = len(nodes) // (options.num_islands * options.migration_interval)
    migrants: list[SearchNode] = []
    for r in range(1, rounds + 1):  # at each migration, each neighbour's top programs so far move over
        cut = r * options.num_islands * options.migration_interval
        for source in {(island - 1) % options.num_islands, (island + 1) % options.num_islands} - {island}:
            home = [n for n in nodes[:cut] if n.group == f"island {source}"]
            count = max(1, int(len(home) * options.migration_rate))
            top = sorted((n for n in home if n.status == "good"), key=fitness, reverse=True)[:count]
            migrants += [n for n in top if n not in own and n not in migrants]
    return own + migrants


def sample_parent(
    population: list[SearchNode], archive: list[SearchNode], rng: random.Random, options: EvolveOptions, fitness
) -> SearchNode | None:
    """Exploration: any program of the island; exploitation: an archive elite; else by fitness rank."""
    working = [n for n in population if n.status == "good"]
    roll = rng.random()
    if roll < options.exploration_ratio:
        return rng.choice(population) if population else None
    if not working:
        return None
    if roll < options.exploration_ratio + options.exploitation_ratio:
        elite = [n for n in archive if n in working]
        return rng.choice(elite or working)
    ranked = sorted(working, key=fitness)
    return rng.choices(ranked, weights=range(1, len(ranked) + 1))[0]


class OpenEvolve(SearchAgent):
    name, instructions, options_model = ROLE, INSTRUCTIONS, EvolveOptions

    def search(self, run: Search, options: EvolveOptions) -> None:
        ctx = run.ctx
        while ctx.steps_left() > 0:
            generation = len(run.nodes)
            island = island_of(generation, options.num_islands)
            population = members(run.nodes, island, options, run.fitness)
            grid = elites(population, run.baseline, run.fitness, options.feature_bins)
            archive = sorted(grid.values(), key=run.fitness, reverse=True)[: options.archive_size]
            rng = random.Random(f"{ctx.seed or 0}:{self.name}:{generation}")
            parent = sample_parent(population, archive, rng, options, run.fitness)
            top = sorted(run.good(), key=run.fitness, reverse=True)[: options.num_top_programs]
            others = [n for n in population if n not in top and n is not parent]
            inspirations = rng.sample(others, min(options.num_inspirations, len(others)))
            context = "\n\n".join(
                filter(None, [run.summary(top, "Top programs"), run.summary(inspirations, "Inspirations")])
            )
            if parent is not None and parent.status == "buggy":
                debug = parent.depth < options.max_debug_depth and rng.random() < options.debug_prob
                operator, text = ("debug", "Fix this failed program.") if debug else ("mutate", "Mutate the parent.")
            else:
                operator = "mutate"
                text = "Mutate the parent program." if parent else "Evolve the initial program below."
            run.expand([Job(parent, operator, f"island {island}", context, text)])


# one answer per program: a plan and edit blocks
register_agent(ROLE, OpenEvolve, {ROLE: ()}, {ROLE: answer.offline_policy}, {ROLE: {"temperature": TEMPERATURE}})
