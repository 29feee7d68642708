"""Interop with FML-bench main's result layout: our runs exported, then scored by
`bench score`, give the rows computed directly from our run records."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.cli.app import main
from bench.fml.export import fml_rows

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "tests/fixtures/bench/tiny-r2/task.yaml"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fmlgrid") / "results"
    command = [
        sys.executable,
        "-m",
        "aiscientist",
        "bench",
        "run",
        "--agents",
        "hpsearch",
        "--tasks",
        str(TASK),
        "--rounds",
        "2",
        "--steps",
        "3",
        "--out",
        str(out),
        "--workers",
        "1",
        "--no-progress",
        "--no-report",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b)
    return a == b


@pytest.mark.slow
def test_export_then_score_reproduces_our_rows(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = fml_rows(results)["hpsearch"]["tiny-r2"]
    out = tmp_path / "fml"
    assert main(["bench", "export", str(results), str(out)]) == 0
    run = next((out / "hpsearch" / "tiny-r2").glob("round_*"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["total_steps"] == 3 and len(summary["val_steps"]) == 3
    assert len(list((run / "step_snapshots").glob("step_*_code.json"))) == 3
    assert len(list((out / "hpsearch" / "tiny-r2").glob("_round_*"))) == 1  # the other round, skipped by FML-bench
    assert main(["bench", "score", str(out / "hpsearch"), "--fml-root", str(out), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)["tiny-r2"]
    assert set(scored) == set(ours)
    for column, value in ours.items():
        assert same(scored[column] if scored[column] is not None else math.nan, value), column
    # by hand from the exported summary: the curve starts at the baseline and is ranged 0..1
    baseline = summary["baseline_primary_metric"]
    best, curve = baseline, []
    for step in summary["val_steps"]:
        if step["primary_metric"] is not None:
            best = max(best, step["primary_metric"])
        curve.append(best - baseline)
    assert scored["AUC-over-steps"] == pytest.approx(sum(curve) / 3)
    assert scored["Valid step ratio"] == pytest.approx(
        sum(s["val_result"]["success"] for s in summary["val_steps"]) / 3
    )
    assert scored["embedder"] == ours["embedder"] and scored["Exploration Spread"] is not None
    assert main(["bench", "export", str(results), str(out)]) == 2  # refuses to write into a non-empty folder
    # the bench report carries the same table beside its own
    assert main(["bench", "report", str(results), "--out", str(tmp_path / "report")]) == 0
    reported = json.loads((tmp_path / "report" / "fml_bench.json").read_text())["hpsearch"]["tiny-r2"]
    assert reported == json.loads(
        json.dumps({k: None if isinstance(v, float) and math.isnan(v) else v for k, v in ours.items()})
    )
    assert "Normalized Improvement" in (tmp_path / "report" / "fml_bench.md").read_text()
