"""The bench report reads well: human numbers, column definitions, paired comparisons
with bootstrap intervals and win rates over rounds, a flag when a validation gain did
not carry over to the hidden test, and links to each run's page; it renders in Chromium."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.records.cell import CellSummary
from bench.scoring.metrics import gain_lost_on_test
from bench.scoring.paired import bootstrap_ci, paired_comparisons
from bench.scoring.report import LOST, write_report
from tests.browser_check import visit

ROOT = Path(__file__).resolve().parents[3]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"


def summary(agent: str, k: int, val: float, test: float, **kw) -> CellSummary:
    base = dict(
        task="t",
        agent=agent,
        round=k,
        metric="d/mse",
        direction="min",
        baseline=0.6,
        baseline_test=0.55,
        has_test=True,
        assigned=3,
        completed=3,
        successful=3,
        best_step=1,
        best_val=val,
        test_metric=test,
        curve=[val, val, val],
        tokens=38_660,
    )
    return CellSummary(**{**base, **kw})


def test_paired_comparison_tells_a_real_gap_from_noise():
    runs = [summary("a", k, 0.3, 0.30 + 0.01 * k) for k in range(1, 6)] + [
        summary("b", k, 0.5, 0.50 + 0.01 * k) for k in range(1, 6)
    ]
    runs += [summary("c", k, 0.3, 0.30 + (0.3 if k % 2 else -0.3)) for k in range(1, 6)]
    pairs = {(p.a, p.b): p for p in paired_comparisons(runs)}
    ab, ac = pairs[("a", "b")], pairs[("a", "c")]
    assert (ab.rounds, ab.win_rate, ab.verdict) == (5, 1.0, "a better")  # lower mse is better
    assert ab.mean_diff == pytest.approx(0.2) and 0 < ab.low <= 0.2 <= ab.high
    assert ac.verdict == "within noise" and ac.low < 0 < ac.high and ac.win_rate == pytest.approx(0.6)
    assert bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0) and bootstrap_ci([0.0, 2.0]) == bootstrap_ci([0.0, 2.0])
    assert paired_comparisons(runs[:1] + runs[5:6]) == []  # one round: nothing to pair


def _results(tmp_path: Path, runs: list[CellSummary]) -> Path:
    for run in runs:
        folder = tmp_path / "runs" / run.task / run.agent / f"round_{run.round}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(run.model_dump_json())
    return tmp_path


def test_one_round_report_formats_numbers_and_flags_lost_gains(tmp_path):
    runs = [summary("a", 1, 0.5, 0.9), summary("b", 1, 0.4, 0.5)]  # a: val better than 0.6 but test 0.9 worse than 0.55
    assert [gain_lost_on_test(r) for r in runs] == [True, False]
    write_report(_results(tmp_path, runs))
    md = (tmp_path / "report" / "report.md").read_text()
    assert "2 finished runs, 2 agents, 1 task, round 1." in md
    assert "0.9 (val 0.5) " + LOST in md and "0.5 (val 0.4) |" in md
    assert f"{LOST} in 1 run: t · a · round 1 (val 0.5 vs 0.6, test 0.9 vs 0.55)" in md
    agents = (tmp_path / "report" / "agents.md").read_text()
    assert "38,660" in agents and "e+0" not in agents and "±" not in agents  # one task: no spread shown
    assert "no paired comparison" in md and not (tmp_path / "report" / "paired.md").exists()
    assert "- **normalised improvement**: gain of the score" in md


def test_each_peer_stands_next_to_our_reimplementation_with_paired_rounds(tmp_path):
    agents = {"linear": 0.5, "peer-openevolve": 0.45, "aide": 0.4, "aiscientist": 0.3, "peer-aide": 0.35}
    runs = [summary(a, k, v, v + 0.01 * k) for a, v in agents.items() for k in (1, 2, 3)]
    write_report(_results(tmp_path, runs))
    order = ["aide", "peer-aide", "aiscientist", "linear", "peer-openevolve"]
    utility = (tmp_path / "report/utility.md").read_text().splitlines()[0]
    assert utility == "| task | metric | dir | baseline | " + " | ".join(order) + " |"
    rows = [line.split(" | ")[0].lstrip("| ") for line in (tmp_path / "report/agents.md").read_text().splitlines()[2:]]
    assert rows == order  # the same metrics, row beside row
    paired = (tmp_path / "report/paired.md").read_text().splitlines()
    assert paired[2].startswith("| t | aide vs peer-aide | 3 | -0.05 |")  # the peer against ours comes first
    assert "peer-aide better" in paired[2]  # lower mse is better: 0.35 beats 0.4 in every round
    assert "| t | aiscientist vs peer-aide | 3 |" in "\n".join(paired)  # and against every other agent
    md = (tmp_path / "report/report.md").read_text()
    assert "peer-aide, peer-openevolve: the peers' released code, each next to our re-implementation" in md


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("grid2") / "results"
    command = [
        sys.executable,
        "-m",
        "aiscientist",
        "bench",
        "run",
        "--agents",
        "hpsearch,linear",
        "--tasks",
        str(TINY),
        "--rounds",
        "2",
        "--steps",
        "2",
        "--model",
        "offline",
        "--out",
        str(out),
        "--workers",
        "2",
        "--no-progress",
        "--embedder",
        "minilm",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stderr


@pytest.mark.slow
def test_two_round_grid_prints_cells_and_reports_intervals(grid):
    out, log = grid
    lines = [line for line in log.splitlines() if line.startswith("done: tiny-quadratic")]
    assert len(lines) == 4 and all("2/2 steps" in line for line in lines)
    paired = (out / "report" / "paired.md").read_text()
    assert "| tiny-quadratic | hpsearch vs linear | 2 |" in paired and "%" in paired and "[" in paired
    with (out / "report" / "runs.csv").open() as handle:
        ledgers = [row["ledger"] for row in csv.DictReader(handle)]
    assert len(ledgers) == 4 and all(len((out / "report" / p).read_text().splitlines()) == 3 for p in ledgers)


@pytest.mark.slow
def test_report_renders_in_chromium_and_links_run_pages(grid, tmp_path):
    out, _ = grid
    index = out / "report" / "index.html"
    shot = tmp_path / "report.png"
    with visit(index) as seen:
        page = seen.page
        assert page.locator("#utility + table tbody tr").count() == 1
        assert page.locator("#paired + table tbody tr").count() == 1
        assert page.locator("#runs + table tbody tr").count() == 4
        assert page.locator("img").evaluate_all("imgs => imgs.every(i => i.naturalWidth > 0)")
        page.screenshot(path=str(shot), full_page=True)
        page.locator("#runs + table a").first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/runs/tiny-quadratic/hpsearch/round_1/ws/run.html")
        assert page.locator("section.step").count() == 2
    assert seen.errors == []
    assert (
        all(url.startswith("file://") for url in seen.requests) and len(seen.requests) == 2
    )  # the report, then the run page
    assert shot.stat().st_size > 10_000
