"""Progress: the solve line names the best successful step and whether it beats the
baseline; the bench grid shows cells from their run folders (a real offline run's)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from aiscientist.cli.app import main
from aiscientist.orchestrator.progress import best_text
from bench.grid.progress import GridProgress
from bench.grid.runner import GridConfig, run_specs

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.mark.parametrize(
    ("best", "direction", "text"),
    [
        (None, "min", "no successful step yet (baseline 0.6072)"),
        (1.20403, "min", "best 1.20403 at step 1 (none beats the baseline 0.6072 yet)"),
        (0.5, "min", "best 0.5 at step 1 (baseline 0.6072)"),
        (0.5, "max", "best 0.5 at step 1 (none beats the baseline 0.6072 yet)"),
    ],
)
def test_solve_line_says_whether_the_baseline_is_beaten(best, direction, text):
    assert best_text({"best": best, "best_step": 1, "baseline": 0.6072, "direction": direction}) == text


def test_solve_progress_line_on_a_real_run(tmp_path, capsys):
    assert main(["solve", str(TINY), "--model", "offline", "--steps", "1", "--run-dir", str(tmp_path / "run")]) in (
        0,
        1,
    )
    out = capsys.readouterr().out
    step = json.loads((tmp_path / "run" / "experiments" / "step_0001" / "step.json").read_text())
    beaten = "(baseline 0.6072)" if step["metric"] < 0.6072 else "(none beats the baseline 0.6072 yet)"
    assert f"step 1/1 · best {step['metric']:.6g} at step 1 {beaten}" in out


def test_grid_progress_reports_each_finished_cell_once(tmp_path):
    run = tmp_path / "solo"
    assert main(["solve", str(TINY), "--model", "offline", "--steps", "2", "--run-dir", str(run)]) in (0, 1)
    config = GridConfig(agents=["linear"], tasks=[TINY], rounds=3, steps=2)
    out = tmp_path / "results"
    first, second, third = run_specs(config)
    shutil.copytree(run, first.cell(out).root / "ws")
    (first.cell(out).root / "result.json").write_text(json.dumps({"error": None}))
    shutil.copytree(run, second.cell(out).root / "ws")
    (second.cell(out).root / "ws" / "experiments" / "step_0002" / "step.json").unlink()  # still running
    buffer = io.StringIO()
    live = GridProgress([first, second, third], config, out, enabled=False, console=Console(file=buffer, width=200))
    cells = live.cells()
    assert [c.state for c in cells] == ["done", "running", "queued"]
    step1 = json.loads((run / "experiments" / "step_0001" / "step.json").read_text())
    assert (cells[1].steps, cells[1].best, cells[1].best_step) == (1, step1["metric"], 1)
    live.refresh()
    assert buffer.getvalue() == ""  # finished before this session: not repeated
    (second.cell(out).root / "error.txt").write_text("Traceback ...\nRuntimeError: boom\n")
    live.refresh()
    live.refresh()
    assert buffer.getvalue().splitlines() == [
        "failed: tiny-quadratic · linear · round 2 · 1/2 steps · best "
        + f"{step1['metric']:.4g} at step 1 · RuntimeError: boom"
    ]
    table = Console(file=io.StringIO(), width=200)
    table.print(live.table(live.cells()))
    assert "1/3 cells finished" in table.file.getvalue() and "queued" in table.file.getvalue()
