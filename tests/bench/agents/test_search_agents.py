"""FML-bench main's whole agent set on the tiny task with the offline model: one smoke
grid of all seven, each agent's search shape read back from its tree record and step
records, the hidden test run on its best step; and a grid killed mid-cell that resumes
each cell from its last recorded step with the tree and phase state intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiscientist.records.cell import CellSummary
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from aiscientist.records.tree import read_tree
from aiscientist.viewer import write_page
from bench.agents.search.ai_scientist_v2 import STAGES, V2Options, stage_at
from bench.agents.search.common import State
from bench.grid.runner import run_grid
from bench.grid.spec import GridConfig

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "tests/fixtures/tiny/task.yaml"
BASELINE = 0.6072
STEPS = 8
SEARCH = ["aira-mcts", "openevolve", "ai-scientist-v2", "autoresearch", "adaptive-search"]
FML_MAIN = ["aide", "ai-scientist", *SEARCH]


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fml_agents")
    config = GridConfig(agents=FML_MAIN, tasks=[TASK], rounds=1, steps=STEPS, model="offline", embedder="minilm")
    summary = run_grid(config, out, progress=False)
    assert summary["failed"] == {} and summary["ran"] == len(FML_MAIN)
    return out


def cell(out: Path, agent: str) -> tuple[Path, dict]:
    folder = out / "runs/tiny-quadratic" / agent / "round_1"
    return folder / "ws", CellSummary.model_validate_json((folder / "result.json").read_text())


@pytest.mark.parametrize("agent", SEARCH)
def test_each_agent_beats_the_baseline_within_eight_steps(grid: Path, agent: str):
    ws, result = cell(grid, agent)
    assert result.result.steps_completed == STEPS and result.result.best_metric < BASELINE
    assert (
        result.result.test_metric is not None and result.result.test_error is None
    )  # the hidden test ran on the best step


def test_the_smoke_grid_runs_every_agent_to_its_budget(grid: Path):
    for agent in FML_MAIN:
        ws, result = cell(grid, agent)
        assert result.result.steps_completed == STEPS == len(load_steps(RunPaths(ws))) and result.agent == agent


@pytest.mark.parametrize("agent", SEARCH)
def test_the_tree_record_matches_the_counted_steps(grid: Path, agent: str):
    ws, _ = cell(grid, agent)
    tree = read_tree(ws)
    records = {r.step: r for r in load_steps(RunPaths(ws))}
    assert tree is not None and tree.agent == agent
    assert sorted(n.step for n in tree.nodes) == list(range(1, STEPS + 1))  # one node per counted step
    ids = tree.by_id()
    for n in tree.nodes:
        assert n.metric == records[n.step].metric and n.status in ("good", "buggy")
        if n.parent is not None:
            assert ids[n.parent].step < n.step  # a node starts from a node measured before it
    page = write_page(ws).read_text()
    assert "<ul class='tree'>" in page and page.count("from step") == sum(1 for n in tree.nodes if n.parent is not None)


def test_aira_drafts_from_the_root_then_improves_down_the_tree(grid: Path):
    tree = read_tree(cell(grid, "aira-mcts")[0])
    roots = [n for n in tree.nodes if n.parent is None]
    assert [n.operator for n in roots] == ["draft"] * len(roots) and len(roots) >= 2
    ids = tree.by_id()
    for n in tree.nodes:
        if n.parent is not None:
            assert n.operator == ("improve" if ids[n.parent].status == "good" else "debug")
    assert max(sum(1 for m in tree.nodes if m.parent == n.node) for n in tree.nodes) == 2  # num_children


def test_openevolve_takes_its_islands_in_turn(grid: Path):
    tree = read_tree(cell(grid, "openevolve")[0])
    nodes = sorted(tree.nodes, key=lambda n: n.node)
    assert [n.group for n in nodes] == [f"island {i % 3}" for i in range(STEPS)]
    assert any(n.parent is not None for n in nodes)  # later generations mutate earlier programs


def test_ai_scientist_v2_runs_its_stages_at_their_shares(grid: Path):
    tree = read_tree(cell(grid, "ai-scientist-v2")[0])
    shares = V2Options().stage_shares
    for n in tree.nodes:
        assert n.group == STAGES[stage_at(n.step - 1, STEPS, shares)]
    earlier = [n for n in tree.nodes if n.group != "ablation_studies" and n.status == "good"]
    carried = min(earlier, key=lambda n: n.metric)  # the best of the stages before (mse: lower is better)
    ablations = [n for n in tree.nodes if n.group == "ablation_studies"]
    assert len(ablations) == STEPS - sum(int(STEPS * s) for s in shares[:3])
    assert all(n.operator == "improve" and n.parent == carried.node for n in ablations)  # stage 4 improves it


def test_autoresearch_changes_only_the_current_best(grid: Path):
    tree = read_tree(cell(grid, "autoresearch")[0])
    head, best = None, BASELINE
    for n in sorted(tree.nodes, key=lambda n: n.step):
        assert n.parent == head  # one change to the current best
        kept = n.status == "good" and n.metric < best
        assert n.group == ("keep" if kept else "discard" if n.status == "good" else "crash")
        if kept:
            head, best = n.node, n.metric
    assert head is not None


def test_adaptive_search_stays_greedy_before_its_window(grid: Path):
    ws, _ = cell(grid, "adaptive-search")
    tree = read_tree(ws)
    assert {n.group for n in tree.nodes} == {"phase 1"}  # 8 steps < p1_window 50: no switch
    assert State.model_validate_json(RunPaths(ws).agent_state.read_text()).data == {}


# ---- resume -------------------------------------------------------------------------

TRIGGER = {"p1_window": 2, "p1_epsilon": 1, "branch_cutoff_1": 2, "branch_cutoff_2": 4, "B_freq_window": 1}


def command(out: Path) -> list[str]:
    options = [a for key, value in TRIGGER.items() for a in ("--option", f"adaptive-search.{key}={value}")]
    grid = f"--agents adaptive-search,ai-scientist-v2 --rounds 1 --steps {STEPS} --model offline --workers 2"
    quiet = "--no-progress --no-report --embedder minilm"
    return [sys.executable, "-m", "aiscientist", "bench", "run", "--tasks", str(TASK), "--out", str(out)] + (
        f"{grid} {quiet}".split() + options
    )


def steps_of(ws: Path) -> list[Path]:
    return sorted(ws.glob("experiments/step_*/step.json"))


def test_a_grid_killed_mid_cell_resumes_from_the_last_recorded_step(tmp_path: Path):
    out = tmp_path / "results"
    wss = [out / "runs/tiny-quadratic" / a / "round_1/ws" for a in ("adaptive-search", "ai-scientist-v2")]
    proc = subprocess.Popen(
        command(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:  # kill the whole grid once adaptive-search is in phase 2, mid-cell
        for _ in range(6000):
            if 4 <= len(steps_of(wss[0])) < STEPS and not any((ws.parent / "result.json").exists() for ws in wss):
                break
            assert proc.poll() is None, "the grid finished before it could be interrupted"
            time.sleep(0.05)
        else:
            raise AssertionError("the grid never reached phase 2 of adaptive-search")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = {ws: {p.parent.name: p.read_text() for p in steps_of(ws)} for ws in wss}
    assert all(not (ws.parent / "result.json").exists() for ws in wss)

    done = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    for ws in wss:
        assert [p.parent.name for p in steps_of(ws)] == [f"step_{i:04d}" for i in range(1, STEPS + 1)]
        for name, text in before[ws].items():  # the steps recorded before the kill are kept as they were
            assert (ws / "experiments" / name / "step.json").read_text() == text
        tree = read_tree(ws)
        assert sorted(n.step for n in tree.nodes) == list(range(1, STEPS + 1))  # no node lost, none doubled
        assert CellSummary.model_validate_json((ws.parent / "result.json").read_text()).result.steps_completed == STEPS
    adaptive = read_tree(wss[0])
    state = State.model_validate_json(RunPaths(wss[0]).agent_state.read_text())
    assert state.data["phase"] == 2 and len(state.data["branches"]) == 3  # 5 steps left after 3: three branches
    branches = [n.group for n in sorted(adaptive.nodes, key=lambda n: n.step) if n.group != "phase 1"]
    assert branches == [f"branch {i % 3}" for i in range(len(branches))]  # strict turns across the kill
    firsts = {n.group: n for n in sorted(adaptive.nodes, key=lambda n: -n.step) if n.group != "phase 1"}
    assert all(n.operator == "branch_init" for n in firsts.values())
    forks = [n.parent for n in firsts.values()]
    assert len(set(forks)) == 3  # each branch forks from its own kept node
