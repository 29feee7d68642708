"""A small grid end to end through the CLI (offline model, real sandbox and
experiments): 4 agents × 2 tasks × 1 round × 3 steps. Every metric in the report is
checked against a hand computation on the trajectories the run left behind."""

from __future__ import annotations

import csv
import json
import math
import os
import pickle
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from aiscientist.task import TaskError, load_task
from aiscientist.util.humanize import num
from bench.scoring.contribution_judge import offline_label
from bench.scoring.embed import code_text, get_embedder

ROOT = Path(__file__).resolve().parents[3]
TASKS = [ROOT / "tests/fixtures/tiny/task.yaml", ROOT / "tests/fixtures/bench/tiny-r2/task.yaml"]
AGENTS = ["hpsearch", "aide", "linear"]
STEPS = 3


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("grid") / "results"
    command = [
        sys.executable,
        "-m",
        "aiscientist",
        "bench",
        "run",
        "--agents",
        ",".join(AGENTS),
        "--tasks",
        ",".join(map(str, TASKS)),
        "--rounds",
        "1",
        "--steps",
        str(STEPS),
        "--model",
        "offline",
        "--out",
        str(out),
        "--workers",
        "2",
        "--no-progress",
        "--option",
        "aide.target_file=config.py",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def hand_metrics(out: Path) -> dict[tuple[str, str], dict]:
    """Every metric, recomputed from step.json files, diffs, code snapshots and call logs."""
    embedder = get_embedder()
    raw: dict[tuple[str, str], dict] = {}
    tasks = {load_task(p).name: load_task(p) for p in TASKS}
    for name, task in tasks.items():
        sign = 1 if task.metric.direction == "max" else -1
        for agent in AGENTS:
            ws = out / "runs" / name / agent / "round_1" / "ws"
            steps = [json.loads(p.read_text()) for p in sorted(ws.glob("experiments/step_*/step.json"))]
            good = [
                s
                for s in steps
                if s["success"] and s["valid"] and not s["constraint_violated"] and s["metric"] is not None
            ]
            curve, best = [], None
            for s in steps:
                if s in good and (best is None or sign * (s["metric"] - best) > 0):
                    best = s["metric"]
                curve.append(best)
            result = json.loads((ws / "result.json").read_text())
            best_step = None if best is None else next(s["step"] for s in good if s["metric"] == best)
            assert result["best_step"] == best_step
            vectors = [embedder.embed(code_text(task, ws / s["code_path"])) for s in good]
            centroid = np.mean(vectors, axis=0)
            labels = [offline_label((ws / s["diff_path"]).read_text())[0] for s in good]
            calls = (
                [json.loads(line) for line in (ws / "logs/llm_calls.jsonl").read_text().splitlines()]
                if (ws / "logs/llm_calls.jsonl").is_file()
                else []
            )
            tokens = sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls if c["outcome"] == "ok")
            timing = json.loads((ws.parent / "timing.json").read_text())
            first_end = min(datetime.fromisoformat(s["started_at"]).timestamp() + s["duration_s"] for s in steps)
            summary = json.loads((ws.parent / "result.json").read_text())
            assert summary["result"] == result  # the cell's summary embeds the run's result.json
            assert result["ttfe_s"] == round(first_end - timing["first_started"], 3)
            assert result["experiments_per_hour"] == round(len(steps) * 3600 / timing["wall_time_s"], 3)
            raw[(name, agent)] = {
                "sign": sign,
                "baseline": task.baseline,
                "best_val": best,
                "score": result["test"]["metric"] if result.get("test") else None,
                "curve": curve,
                "success_rate": len(good) / len(steps),
                "completion_rate": len(steps) / STEPS,
                "diversity": float(np.mean([np.linalg.norm(v - centroid) for v in vectors])) if vectors else None,
                "academic_rate": labels.count("academic") / len(labels) if labels else None,
                "tokens": tokens,
                "tokens_per_step": tokens / len(steps),
                "ttfe_s": result["ttfe_s"],
                "experiments_per_hour": len(steps) * 3600 / timing["wall_time_s"],
            }
    for name, task in tasks.items():
        cells = {a: raw[(name, a)] for a in AGENTS}
        sign, baseline = cells[AGENTS[0]]["sign"], task.baseline
        measured = json.loads((out / "baselines" / name / "baseline.json").read_text())
        assert measured["val"] == pytest.approx(baseline, abs=1e-3)  # the stated baseline is what the code does
        test_baseline = measured["test"]
        scores = [c["score"] for c in cells.values() if c["score"] is not None] + [test_baseline]
        vals = [c["best_val"] for c in cells.values() if c["best_val"] is not None]
        score_span, curve_span = max(scores) - min(scores), max(vals + [baseline]) - min(vals + [baseline])
        fixed = task.score_range  # a fixed range (FML-bench main's rule) replaces the spread over runs
        if fixed is not None:
            score_span = curve_span = abs(fixed.p_best - fixed.p_worst)
        target = min(vals) if sign > 0 else max(vals)
        for cell in cells.values():
            norm = lambda v, s, b: 0.0 if v is None or s == 0 else max(0.0, sign * (v - b) / s)  # noqa: E731
            cell["normalised"] = norm(cell["score"], score_span, test_baseline)
            cell["auc"] = sum(norm(v, curve_span, baseline) for v in cell["curve"]) / (
                len(cell["curve"]) if fixed is not None else STEPS
            )
            cell["steps_to_target"] = next(
                (i for i, v in enumerate(cell["curve"], 1) if v is not None and sign * (v - target) >= 0), None
            )
    return raw


def test_grid_tables_and_metrics_match_hand_computation(grid: Path):
    expected = hand_metrics(grid)
    report = grid / "report"
    with (report / "per_task.csv").open() as handle:
        rows = {(r["task"], r["agent"]): r for r in csv.DictReader(handle)}
    assert set(rows) == set(expected)
    for key, want in expected.items():
        row = rows[key]
        for field in (
            "best_val",
            "score",
            "normalised",
            "auc",
            "success_rate",
            "completion_rate",
            "diversity",
            "academic_rate",
            "tokens",
            "tokens_per_step",
            "steps_to_target",
            "ttfe_s",
            "experiments_per_hour",
        ):
            value = want[field]
            if value is None:
                assert row[field] == "", (key, field, row[field])
            else:
                assert math.isclose(float(row[field]), value, rel_tol=1e-6, abs_tol=1e-9), (
                    key,
                    field,
                    row[field],
                    value,
                )
        assert row["embedder"] == get_embedder().name
    # at least one agent improved on each task, so the normalised numbers are not all zero
    assert all(any(expected[(t, a)]["normalised"] > 0 for a in AGENTS) for t in ("tiny-quadratic", "tiny-r2"))

    utility = (report / "utility.md").read_text()
    for (task, agent), want in expected.items():
        assert f"{num(want['score'])} (val {num(want['best_val'])})" in utility
    with (report / "utility.csv").open() as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["task", "metric", "dir", "baseline", *sorted(AGENTS)]
    assert [r[0] for r in table[1:]] == ["tiny-quadratic", "tiny-r2"] and [r[2] for r in table[1:]] == ["min", "max"]

    pace = (report / "pace.md").read_text()
    assert all(f"| {t} | {a} | {num(w['ttfe_s'])} |" in pace for (t, a), w in expected.items())
    baselines = (report / "report.md").read_text()
    assert "Baseline measurement, once per task, apart from the TTFE: tiny-quadratic " in baselines
    with (report / "agents.csv").open() as handle:
        agents = {r["agent"]: r for r in csv.DictReader(handle)}
    for agent in AGENTS:
        values = [expected[(t, agent)]["normalised"] for t in ("tiny-quadratic", "tiny-r2")]
        mean, std = float(np.mean(values)), float(np.std(values, ddof=1))
        assert agents[agent]["normalised improvement"] == f"{num(mean)} ± {num(std, 2)}"
        assert agents[agent]["tasks"] == "2"


def test_grid_plots_are_valid_pngs_and_page_is_self_contained(grid: Path):
    import matplotlib.image

    report = grid / "report"
    pngs = [report / "curves_tiny-quadratic.png", report / "curves_tiny-r2.png", report / "perf_vs_diversity.png"]
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        image = matplotlib.image.imread(png)
        assert image.shape[0] > 100 and image.shape[1] > 100 and image.shape[2] in (3, 4)
        assert image.std() > 0.01  # something is drawn
    page = (report / "index.html").read_text()
    assert page.count("data:image/png;base64,") == 3
    assert ".png'" not in page and "src='http" not in page
    for agent in AGENTS:
        assert f"<td>{agent}</td>" in page


def test_report_is_regenerated_from_results_alone(grid: Path, tmp_path: Path):
    again = tmp_path / "again"
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "bench", "report", str(grid), "--out", str(again)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for name in ("utility.csv", "agents.csv", "per_task.csv", "utility.md"):
        assert (again / name).read_text() == (grid / "report" / name).read_text()


def test_grid_jobs_run_in_order_with_at_most_the_asked_number_in_flight():
    """On a shared Ray cluster with more CPUs than the grid asked for, the grid itself
    keeps no more than its workers' number of runs going (here: a real thread pool
    larger than the limit)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from bench.grid.runner import _drain

    lock, state = threading.Lock(), {"now": 0, "most": 0, "order": []}

    def job(name: str) -> None:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            state["order"].append(name)
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        if name == "c":
            raise ValueError("cell c broke")

    names = list("abcdef")
    failures = _drain(lambda: ThreadPoolExecutor(max_workers=6), [(n, job, (n,)) for n in names], 2, lambda: None)
    assert state["most"] == 2 and state["order"] == names
    assert failures == {"c": "ValueError('cell c broke')"}


def _task_error_job(name: str) -> str:
    if name == "bad":
        raise TaskError("x/task.yaml", "test_prepare", "unknown field")
    return name


def _killed_job(name: str) -> str:
    if name == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    return name


def test_the_grid_goes_on_past_a_job_whose_error_or_death_broke_the_process_pool():
    """A worker's TaskError (an exception whose constructor takes three arguments) once broke
    the real spawn pool for every later cell; a worker killed by a signal still must not."""
    from bench.grid.executors import open_executor
    from bench.grid.runner import CellFailed, _drain

    def open_pool():
        return open_executor("pool", None, [[0]])

    assert pickle.loads(pickle.dumps(TaskError("x/task.yaml", "f", "why"))).reason == "why"
    wrapped = [(n, _task_error_job, (n,)) for n in ("a", "bad", "b")]
    failures = _drain(open_pool, wrapped, 1, lambda: None)
    assert failures == {"bad": "TaskError('x/task.yaml: test_prepare: unknown field')"}
    killed = [(n, _killed_job, (n,)) for n in ("a", "killed", "b")]
    failures = _drain(open_pool, killed, 1, lambda: None)
    assert failures == {"killed": "its worker process died (killed by a signal or out of memory)"}
    assert issubclass(CellFailed, RuntimeError)
