"""The grid on Ray (a real local cluster of 2 CPUs) against the process pool: the same
run folders and per-run results with the same seed, finished cells skipped on re-run,
a failed cell recorded and not fatal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.grid.runner import GridConfig, run_grid

pytest.importorskip("ray", reason="Ray is not installed (pip install 'aiscientist[scale]')")
ROOT = Path(__file__).resolve().parents[3]
TIMING = {"wall_time_s", "experiment_time_s", "duration_s", "started_at", "finished_at", "ts"}
TIMING |= {"ttfe_s", "experiments_per_hour", "peak_memory_mb"}  # measurements, not results


def _plain(value: object) -> object:
    """`value` without clock readings (at any depth: a cell's summary embeds the run's result),
    its floats to 12 digits (the embedder's sums differ in the last bits between processes)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return float(f"{value:.12g}") if isinstance(value, float) else value


def _grid(executor: str) -> GridConfig:
    # external without its command option fails: one failed cell per round
    return GridConfig(
        agents=["hpsearch", "external"],
        tasks=[ROOT / "tests/fixtures/tiny/task.yaml"],
        rounds=2,
        steps=2,
        model="offline",
        workers=2,
        seed=7,
        executor=executor,
    )


def _records(out: Path) -> dict[str, dict]:
    """Every run's result.json and step records, without clock readings."""
    found = {}
    for path in sorted(out.glob("runs/*/*/round_*/result.json")) + sorted(
        out.glob("runs/*/*/round_*/ws/experiments/step_*/step.json")
    ):
        found[path.relative_to(out).as_posix()] = _plain(json.loads(path.read_text()))
    return found


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def grids(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    runs = {}
    for executor in ("pool", "ray"):
        out = tmp_path_factory.mktemp(executor) / "results"
        runs[executor] = (out, run_grid(_grid(executor), out, progress=False))
    return runs


def test_ray_gives_the_pools_results(grids) -> None:
    (pool_out, _), (ray_out, _) = grids["pool"], grids["ray"]
    pool, ray = _records(pool_out), _records(ray_out)
    assert (
        len([p for p in pool if p.endswith("result.json")]) == 2 and len(pool) == 2 + 2 * 2
    )  # hpsearch: 2 rounds x 2 steps
    assert ray == pool


def test_a_failed_cell_is_recorded_not_fatal(grids) -> None:
    for executor, (out, outcome) in grids.items():
        assert outcome["runs"] == 4 and outcome["ran"] == 4, executor
        assert sorted(outcome["failed"]) == ["tiny-quadratic/external/round_1", "tiny-quadratic/external/round_2"], (
            executor
        )
        assert all("needs an option command" in error for error in outcome["failed"].values()), executor
        assert "needs an option command" in (out / "runs/tiny-quadratic/external/round_1/error.txt").read_text()
        assert (out / "runs/tiny-quadratic/hpsearch/round_2/result.json").is_file()


def test_finished_cells_are_skipped_on_rerun(grids) -> None:
    out, _ = grids["ray"]
    before = _records(out)
    grid = _grid("ray").model_copy(update={"agents": ["hpsearch"]})
    assert run_grid(grid, out, progress=False) == {"runs": 2, "ran": 0, "failed": {}}
    assert _records(out) == before


def test_cli_rejects_an_unknown_executor(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "aiscientist",
        "bench",
        "run",
        "--agents",
        "hpsearch",
        "--tasks",
        str(ROOT / "tests/fixtures/tiny/task.yaml"),
        "--out",
        str(tmp_path / "o"),
        "--executor",
        "spark",
    ]
    bad = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "invalid choice: 'spark'" in bad.stderr
    stray = subprocess.run(
        [*command[:-1], "pool", "--address", "auto", "--model", "offline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        stray.returncode == 2
        and "--address is the address of a Ray cluster: use it with --executor ray" in stray.stderr
    )
    assert not (tmp_path / "o").exists()
