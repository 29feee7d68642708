"""`bench run --wall-time S`: every agent gets S seconds of wall clock per cell, counted from the
cell's start, whatever the step cap; a wall-time stop is a normal end (result.json, the hidden test
on the best step). Offline model, real sandbox and experiments on the tiny task."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiscientist.records.accounting import is_better, signed_gain
from aiscientist.records.cell import CellPaths, CellSummary
from aiscientist.util.humanize import num
from bench.grid.runner import execute_run
from bench.grid.spec import GridConfig, RunSpec

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "tests/fixtures/tiny/task.yaml"
WALL = 4.0
STEPS = 1000  # a cap never reached in WALL seconds (a tiny step takes about a second)
AGENTS = ["hpsearch", "aide", "aiscientist"]  # no model (run_step refuses), a kernel loop, the orchestrator
STEP_S = 5.0  # the most a step started just before the limit may take on a busy machine (it is not cut short)


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wall") / "results"
    command = [
        sys.executable, "-m", "aiscientist", "bench", "run", "--agents", ",".join(AGENTS), "--tasks", str(TASK),
        "--rounds", "1", "--steps", str(STEPS), "--wall-time", str(WALL), "--model", "offline", "--out", str(out),
        "--workers", "2", "--no-progress", "--no-report", "--embedder", "minilm",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_every_agent_stops_at_the_wall_time_not_the_step_cap(grid: Path):
    out = grid
    assert json.loads((out / "grid.json").read_text())["wall_time_s"] == WALL
    for agent in AGENTS:
        summary = CellSummary.model_validate_json(CellPaths.of(out, "tiny-quadratic", agent, 1).result.read_text())
        result = summary.result
        assert result.stop_reason == "wall_time", (agent, result.stop_reason, result.stop_detail)
        assert summary.error is None  # a normal end, as the step budget is
        assert 1 <= result.steps_total < STEPS, agent
        assert WALL <= result.wall_time_s <= WALL + STEP_S, (agent, result.wall_time_s)
        assert result.test is not None and result.test.step == result.best_step and result.test.success, agent
        assert result.ttfe_s is not None and result.ttfe_s < WALL and result.experiments_per_hour > 0
        assert result.config["wall_time_s"] == WALL and result.config["steps"] == STEPS


@pytest.mark.parametrize("agent", ["hpsearch", "aiscientist"])
def test_a_resumed_cell_counts_its_earlier_sessions(tmp_path: Path, agent: str):
    """A cell whose earlier sessions already took the budget runs no step when it is reopened."""
    config = GridConfig(agents=[agent], tasks=[TASK], rounds=1, steps=STEPS, wall_time_s=WALL, model="offline")
    spec = RunSpec(task_path=TASK, task="tiny-quadratic", agent=agent, round=1)
    cell = spec.cell(tmp_path)
    cell.root.mkdir(parents=True)
    earlier = {"wall_time_s": WALL + 1, "open_since": None, "first_started": time.time() - 60}
    cell.timing.write_text(json.dumps(earlier))
    assert execute_run(spec, config, tmp_path).startswith("wall_time")
    result = CellSummary.model_validate_json(cell.result.read_text()).result
    assert result.stop_reason == "wall_time" and result.steps_total == 0


def test_peers_table_reports_the_wall_time_outcome(grid: Path, tmp_path: Path):
    """benchmarks/peers.py's table over the grid: improvement rate, TTFE and experiments per hour
    from each cell's result.json, and the hidden test paired by round against aiscientist (a second
    round copied from the first, so the pairing is exact)."""
    out = tmp_path / "results"
    shutil.copytree(grid, out)
    summaries = {}
    for agent in AGENTS:
        cell = CellPaths.of(out, "tiny-quadratic", agent, 1)
        summaries[agent] = CellSummary.model_validate_json(cell.result.read_text())
        second = CellPaths.of(out, "tiny-quadratic", agent, 2)
        second.root.mkdir(parents=True)
        second.result.write_text(summaries[agent].model_copy(update={"round": 2}).model_dump_json())
    table = tmp_path / "table.json"
    command = [
        sys.executable, str(ROOT / "benchmarks/peers.py"), "--table-only", "--out", str(out), "--agents",
        ",".join(AGENTS), "--tasks", str(TASK), "--wall-time", str(WALL), "--model", "offline", "--json", str(table),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 s per cell, steps capped at 1000" in done.stdout
    rows = {r["agent"]: r for r in json.loads(table.read_text())}
    reference = summaries["aiscientist"].result.test_metric
    for agent, summary in summaries.items():
        row, result = rows[agent], summary.result
        better = is_better(result.test_metric, summary.baseline_test, "min")
        assert row["improved"] == f"{2 * better} / 2"
        assert row["TTFE s"] == num(result.ttfe_s) and row["exp/h"] == num(result.experiments_per_hour)
        assert row["best val / base"].startswith(num(result.best_metric))
        assert row["stops other than the budget"] == "-"  # wall_time is the budget
        paired = row["vs aiscientist (test, paired)"]
        if agent == "aiscientist":
            assert paired == "-"
            continue
        gain = signed_gain(result.test_metric, reference, "min")
        wins = "100%" if gain > 0 else "0%" if gain < 0 else "50%"
        assert paired.startswith(f"{gain:+.4g} [{gain:+.4g}, {gain:+.4g}], wins {wins}, 2 rounds"), paired
