"""The search rules of FML-bench main's agents on constructed trees, populations and
histories: AIRA's UCT, OpenEvolve's MAP-Elites and migration, AI-Scientist-v2's stage
budget, autoresearch's greedy chain and AdaptiveSearch's trigger, branches and sub-rules."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiscientist.task import load_task
from bench.agents.search.adaptive import (
    AdaptiveOptions,
    branch_count,
    curve,
    participation_ratio,
    stagnated,
    subrules,
)
from bench.agents.search.ai_scientist_v2 import STAGES, V2Options, stage_at, stage_budgets
from bench.agents.search.aira import AiraOptions, UctTree
from bench.agents.search.common import SearchNode
from bench.agents.search.greedy import replay
from bench.agents.search.openevolve import EvolveOptions, elites, members, sample_parent

BASE = {"train.py": "lr = 0.1\nepochs = 40\n"}

TINY = Path(__file__).resolve().parents[2] / "fixtures/tiny/task.yaml"


def node(i: int, parent: int | None = None, metric: float | None = 1.0, group: str | None = None, **kw) -> SearchNode:
    status = kw.pop("status", "good" if metric is not None else "buggy")
    files = kw.pop("files", BASE)
    return SearchNode(
        id=i, parent=parent, operator="improve", group=group, files=files, metric=metric, status=status, **kw
    )


def fit(n: SearchNode) -> float:
    return n.metric if n.metric is not None else -math.inf


# ---- AIRA-MCTS ------------------------------------------------------------------


@st.composite
def trees(draw) -> list[SearchNode]:
    nodes: list[SearchNode] = []
    for i in range(draw(st.integers(1, 14))):
        parent = draw(st.sampled_from([None, *[n.id for n in nodes]]))
        metric = draw(st.one_of(st.none(), st.floats(-5, 5)))
        nodes.append(node(i, parent, metric, depth=draw(st.integers(0, 3))))
    return nodes


@settings(max_examples=60, deadline=None)
@given(trees(), st.floats(-5, 5))
def test_uct_picks_an_unvisited_child_first(nodes: list[SearchNode], metric: float):
    tree = UctTree(nodes, 1.0, AiraOptions())
    fresh = node(99, None, metric, status="pending")  # not measured: no visit yet
    kids = [n for n in nodes if n.parent is None] + [fresh]
    assert max(kids, key=lambda k: tree.uct(None, k)) is fresh


@settings(max_examples=60, deadline=None)
@given(trees(), st.sampled_from([1.0, -1.0]))
def test_uct_statistics_back_propagate_normalised_values(nodes: list[SearchNode], sign: float):
    options = AiraOptions()
    tree = UctTree(nodes, sign, options)

    def subtree(i: int | None) -> list[SearchNode]:
        below = [n for n in nodes if n.parent == i]
        return below + [m for n in below for m in subtree(n.id)]

    for n in nodes:
        assert tree.visits[n.id] == 1 + len(subtree(n.id))  # a node's visits: its subtree
        assert 0.0 <= tree.q(n.id) <= 1.0  # values normalised between the global min and max
    assert tree.visits[None] == len(nodes)
    good = [n for n in nodes if n.status == "good"]
    if len({n.metric for n in good}) > 1:
        best = max(good, key=lambda n: sign * n.metric)
        assert tree.value[best.id] == 1.0
    chosen = tree.select()
    if chosen is not False:  # the chosen node can be expanded and has room for a child
        assert tree.operator(chosen) is not None
        assert len(tree.kids.get(chosen.id if chosen else None, [])) < options.num_children


def test_uct_operators_draft_improve_debug_and_debug_depth():
    tree = UctTree([node(0), node(1, metric=None, depth=2), node(2, metric=None, depth=3)], 1.0, AiraOptions())
    assert [tree.operator(x) for x in (None, *tree.nodes)] == ["draft", "improve", "debug", None]
    full = UctTree([node(0), node(1), node(2, 0, 3.0), node(3, 0, 0.5)], 1.0, AiraOptions())
    assert full.select().id == 1  # root and node 0 are full: the open child with room is expanded


# ---- OpenEvolve -------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(-100, 100)), min_size=1, max_size=12), st.sampled_from([1.0, -1.0]))
def test_map_elites_keeps_the_better_program_in_a_cell(metrics: list[float | None], sign: float):
    nodes = [node(i, None, m) for i, m in enumerate(metrics)]  # the same code: one cell
    grid = elites(nodes, BASE, lambda n: sign * fit(n) if n.metric is not None else -math.inf)
    good = [n for n in nodes if n.status == "good"]
    if not good:
        assert grid == {}
        return
    (kept,) = grid.values()
    assert sign * kept.metric == max(sign * n.metric for n in good)


def test_map_elites_separates_programs_by_size_and_change():
    small = node(0, files={"train.py": "lr = 0.1\nepochs = 40\n"}, metric=1.0)
    large = node(1, files={"train.py": "lr = 0.1\nepochs = 40\n" + "x = 1\n" * 40}, metric=0.5)
    assert len(elites([small, large], BASE, fit)) == 2  # a worse program survives in its own cell


def test_migration_brings_both_neighbours_top_programs():
    options = EvolveOptions()
    nodes = [node(i, None, float(i), group=f"island {i % 3}") for i in range(30)]
    island0 = members(nodes, 0, options, fit)
    migrants = island0[10:]
    assert {n.group for n in migrants} == {"island 1", "island 2"}
    assert sorted(n.id for n in migrants) == [28, 29]  # each neighbour's best, one (10% of 10)
    assert members(nodes[:29], 0, options, fit) == [n for n in nodes[:29] if n.group == "island 0"]


def test_parent_sampling_by_ratio():
    population = [node(i, None, float(i)) for i in range(6)] + [node(6, metric=None)]
    archive = population[4:6]
    exploit = EvolveOptions(exploration_ratio=0.0, exploitation_ratio=1.0)
    rng = random.Random(0)
    assert {sample_parent(population, archive, rng, exploit, fit).id for _ in range(50)} == {4, 5}
    explore = EvolveOptions(exploration_ratio=1.0, exploitation_ratio=0.0)
    picked = {sample_parent(population, archive, rng, explore, fit).id for _ in range(200)}
    assert 6 in picked and len(picked) == 7  # exploration may pick a failed program (to debug it)


# ---- AI-Scientist-v2 --------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300))
def test_stage_transition_happens_at_its_share_of_the_budget(budget: int):
    shares = V2Options().stage_shares
    steps = stage_budgets(budget, shares)
    assert sum(steps) == budget and steps[:3] == [int(budget * s) for s in shares[:3]]
    stages = [stage_at(done, budget, shares) for done in range(budget)]
    assert stages == sorted(stages)  # stages follow each other, never back
    assert [stages.count(i) for i in range(len(STAGES))] == steps


# ---- autoresearch's greedy chain --------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(-10, 10)), max_size=15), st.floats(-10, 10), st.integers(1, 4))
def test_greedy_chain_keeps_only_strict_improvements(metrics: list[float | None], start: float, retries: int):
    nodes = [node(i, None, m) for i, m in enumerate(metrics)]
    chain = replay(nodes, fit, start, retries)
    best, crashes = start, 0
    for n in nodes:
        if n.metric is None:
            crashes = crashes + 1 if crashes + 1 < retries else 0
            assert chain.labels[n.id] == "crash"
        else:
            crashes = 0
            assert chain.labels[n.id] == ("keep" if n.metric > best else "discard")
            best = max(best, n.metric)
    assert chain.best == best and chain.crashes == crashes
    assert (chain.pending is not None) == bool(nodes and nodes[-1].metric is None and crashes)
    assert chain.head is (chain.kept[-1] if chain.kept else None)
    job = chain.job("", "change")
    assert job.operator == ("debug" if chain.pending else "experiment")


# ---- AdaptiveSearch ---------------------------------------------------------------


def test_stagnation_trigger_fires_on_a_flat_window_only():
    nodes = [node(0, metric=1.0), node(1, metric=2.0), node(2, metric=None), node(3, metric=1.5)]
    values = curve(nodes, fit, 0.0, 4.0)
    assert values == [0.25, 0.5, 0.5, 0.5]
    assert not stagnated(values[:2], 2, 0.0)  # k must exceed the window
    assert not stagnated(values[:3], 2, 0.0)  # slope (0.5 - 0.25) / 2 > 0
    assert stagnated(values, 2, 0.0)  # slope (0.5 - 0.5) / 2 <= 0
    assert not stagnated([0.0] * 50, 50, 0.0005) and stagnated([0.0] * 51, 50, 0.0005)


@pytest.mark.parametrize(("remaining", "count"), [(1, 0), (3, 0), (4, 1), (15, 1), (16, 2), (30, 2), (31, 3)])
def test_branch_allocation_by_steps_left(remaining: int, count: int):
    assert branch_count(remaining, AdaptiveOptions()) == count


def test_participation_ratio_counts_directions():
    assert participation_ratio(np.ones((4, 8))) == pytest.approx(1.0)  # one direction
    assert participation_ratio(np.eye(3, 8)) == pytest.approx(3.0)  # three equal, orthogonal ones
    assert participation_ratio(np.zeros((1, 8))) == 1.0


def test_subrules_go_deeper_and_stay_coherent():
    options = AdaptiveOptions(A_freq_window=4, B_freq_window=4)
    base = np.zeros(8)
    near = [np.eye(8)[i % 3] * 0.1 for i in range(4)]  # close to the baseline, three directions
    a, b, reach, effdim = subrules(["discard"] * 4, near, base, 1.0, options)
    assert a and b and reach == pytest.approx(0.1) and effdim > 2
    a, b, _, _ = subrules(["keep"] * 4, near, base, 1.0, options)
    assert not a and not b  # improving: no hint
    far = [np.ones(8) * 5.0] * 4  # far away, one direction
    a, b, _, effdim = subrules(["discard"] * 4, far, base, 1.0, options)
    assert not a and not b and effdim == pytest.approx(1.0)
    assert subrules(["discard"] * 3, near[:3], base, 1.0, options)[:2] == (False, False)  # too short a history


# ---- options ------------------------------------------------------------------------


def test_bad_options_are_refused_before_any_work():
    from bench.agents import UnknownAgent, check_options

    check_options({"aira-mcts": {"uct_c": "2.0"}, "openevolve": {"num_islands": "5"}})
    with pytest.raises(ValueError, match=r"bad --option for adaptive-search: p1_windw: .*its options: .*p1_window"):
        check_options({"adaptive-search": {"p1_windw": "3"}})
    with pytest.raises(ValueError, match="ai-scientist-v2: num_parallel: Input should be a valid integer"):
        check_options({"ai-scientist-v2": {"num_parallel": "four"}})
    with pytest.raises(UnknownAgent):
        check_options({"aira": {"uct_c": "1"}})


def test_aide_and_openevolve_sample_as_the_originals_do(tmp_path: Path):
    """At temperature 0 AIDE's drafts (whose prompt does not change after a failed draft) came
    out identical; its code model samples at 0.5, OpenEvolve's at 0.7; other roles keep the file's."""
    import bench.agents.aide  # noqa: F401  (an agent's module registers its role's settings)
    import bench.agents.search.openevolve  # noqa: F401
    from aiscientist.agent.context import RunContext
    from aiscientist.workspace import Workspace

    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    ctx = RunContext(agent="aide", ws=ws, model="offline", steps=1)
    temperatures = {role: ctx.client(role).config.temperature for role in ("aide", "openevolve", "linear")}
    assert temperatures == {"aide": 0.5, "openevolve": 0.7, "linear": 0.0}


def test_aides_next_draft_repeats_the_previous_prompt_up_to_what_changed(tmp_path: Path):
    """A prefix cache reuses a request's start: after a working draft, AIDE's next draft prompt
    differs from the previous one only from the steps left (in the FACTS line) on: the memory
    of working solutions and the step count come last."""
    from aiscientist.agent.context import RunContext
    from aiscientist.workspace import Workspace
    from bench.agents.aide import Aide, AideJournal, AideNode

    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    ctx = RunContext(agent="aide", ws=ws, model="offline", steps=3)
    journal = AideJournal(target="config.py")
    code = (ws.paths.submission / "config.py").read_text()
    first = Aide()._messages(ctx, journal, "draft", None, code, "min")[1]["content"]
    journal.nodes.append(
        AideNode(id=0, parent=None, stage="draft", plan="more epochs", code=code, metric=0.5, buggy=False)
    )
    ctx.steps = 2  # a step less left
    second = Aide()._messages(ctx, journal, "draft", None, code, "min")[1]["content"]
    shared = os.path.commonprefix([first, second])
    assert shared.endswith('"steps_left": ') and "## Memory" in second[len(shared) :]
    assert len(shared) / len(second) > 0.8
