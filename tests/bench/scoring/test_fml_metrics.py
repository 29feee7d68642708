"""FML-bench main's metrics against hand computations, and `bench score` on a
constructed result folder laid out as FML-bench's run_agent_benchmark.py writes it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from aiscientist.cli.app import main
from bench.fml.results import score_agent
from bench.scoring.exploration import exploration
from bench.scoring.fml_metrics import RANGES, TaskRun, ValStep, score

NAN = math.nan


def info(dataset: str, metric: str, value: float, **extra: object) -> dict:
    return {dataset: {"means": {metric: value, **extra}, "stderrs": {}, "final_info_dict": {}}}


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def fml_root(root: Path, task: str, val: float, test: float) -> None:
    meta = RANGES[task]
    folder = root / "ml_tasks" / task
    write(folder / "baseline_results" / "val_info.json", info(meta.dataset, meta.metric, val))
    write(folder / "baseline_results" / "test_info.json", info(meta.dataset, meta.metric, test))
    write(
        folder / "config.json",
        {"repo_dir": f"workspace/{task}/repo", "target_files": ["algo.py", "split_config.json"], "metric": meta.metric},
    )
    write(root / "workspace" / task / "repo" / "algo.py", "def f(x):\n    return x\n")


def agent_run(
    agent: Path,
    task: str,
    steps: list[tuple[bool, float | None]],
    baseline: float,
    best: float | None,
    total: int,
    test: dict | None | str = None,
    tokens: int = 0,
    seconds: float = 0.0,
) -> Path:
    """AGENT/<task>/<run>/ with summary.json and, unless `test` is None, a final test:
    a test_info.json object, or "bug" for a crash record, or "missing"."""
    run = agent / task / "20260101_000000"
    summary = {
        "agent": agent.name,
        "baseline_primary_metric": baseline,
        "best_val_metric": best,
        "total_steps": total,
        "val_steps": [
            {"step_id": i, "val_result": {"success": ok}, "primary_metric": m}
            for i, (ok, m) in enumerate(steps, start=1)
        ],
        "token_usage": {"total_tokens": tokens},
        "total_duration_seconds": seconds,
    }
    write(run / "summary.json", summary)
    execution = run / "exp_final_test" / "run_final_test" / "execution_20260101_010000"
    if isinstance(test, dict):
        write(execution / "test_info.json", test)
    elif test == "bug":
        write(execution / "records" / "bug_test_20260101_010000.json", {"phase": "test", "error": {"returncode": 1}})
    elif test == "missing":
        execution.mkdir(parents=True)
    return run


def approx(row: dict, expected: dict) -> None:
    for column, value in expected.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(row[column]), column
        else:
            assert row[column] == pytest.approx(value), column


# Generalization_domainbed: higher, range 1 .. 0. Baseline val 0.25, test 0.20.
# Val steps 0.30, fail, 0.28, 0.40, 0.40 out of 6 total; best 0.40; test 0.33.
DOMAINBED = {
    "raw_test": 0.33,
    "baseline_test": 0.20,
    "Normalized Improvement": 0.13,  # (0.33 - 0.20) / 1
    "Val-test |gap|": 0.02,  # |(0.40 - 0.25) - 0.13|
    "Valid step ratio": 4 / 6,
    "AUC-over-steps": 0.09,  # mean of 0.05, 0.05, 0.05, 0.15, 0.15
    "First-improvement step": 1.0,
    "Late-gain fraction": (0.15 - 0.05) / 0.15,  # gain at K=5 vs at K//2 = 2
    "Best-improvement step": 5.0,  # the last step equal to the best
    "Token cost (M)": 2.5,
    "Wall-clock time (h)": 1.5,
}


def test_every_column_on_a_higher_is_better_task(tmp_path: Path) -> None:
    fml_root(tmp_path / "fml", "Generalization_domainbed", 0.25, 0.20)
    steps = [(True, 0.30), (False, None), (True, 0.28), (True, 0.40), (True, 0.40)]
    agent_run(
        tmp_path / "aide",
        "Generalization_domainbed",
        steps,
        0.25,
        0.40,
        6,
        info("ColoredMNIST_test_env2", "in_acc_mean", 0.33),
        tokens=2_500_000,
        seconds=5400,
    )
    row = score_agent(tmp_path / "aide", tmp_path / "fml", explore=False)["Generalization_domainbed"]
    approx(row, DOMAINBED)
    assert row["note"] == "ok"


def test_unlearning_is_scored_as_minus_log10(tmp_path: Path) -> None:
    # forget quality: baseline val 1e-5 (5 after -log10), test 1e-6 (6); steps 1e-3 (3), 1e-2 (2); test 1e-4 (4)
    run = TaskRun(
        task="Unlearning_open_unlearning",
        baseline_val=1e-5,
        baseline_test=1e-6,
        baseline_primary_metric=1e-5,
        best_val_metric=1e-2,
        total_steps=2,
        val_steps=[ValStep(success=True, primary_metric=1e-3), ValStep(success=True, primary_metric=1e-2)],
        test=1e-4,
    )
    row = score(run, RANGES["Unlearning_open_unlearning"])
    approx(
        row,
        {
            "raw_test": 4.0,
            "baseline_test": 6.0,
            "Normalized Improvement": 2 / 6,  # lower is better, range 0 .. baseline (6)
            "Val-test |gap|": abs(3 / 5 - 2 / 6),  # val: (5 - 2) / 5
            "AUC-over-steps": (0.4 + 0.6) / 2,
            "First-improvement step": 1.0,
            "Late-gain fraction": (0.6 - 0.4) / 0.6,
            "Best-improvement step": 2.0,
            "Valid step ratio": 1.0,
        },
    )


CAUSAL = ("ihdp_test", "mae_mean")  # Causality_causalml: lower, range 0 .. baseline; baseline val 0.5, test 0.6


@pytest.mark.parametrize(
    ("test", "best", "note", "raw"),
    [
        (info(*CAUSAL, 0.3), 0.4, "ok", 0.3),
        (None, 0.4, "no_final_test_dir->baseline", 0.6),
        ("bug", 0.4, "bug_test->baseline", 0.6),
        ("missing", 0.4, "missing_test_info->baseline", 0.6),
        (info(*CAUSAL, 0.1, constraint_violated=True), 0.4, "constraint_violated->baseline", 0.6),
        ({"other": {"means": {}}}, 0.4, "metric_extraction_failed->baseline", 0.6),
        (info(*CAUSAL, 0.1), None, "all_val_failed->baseline", 0.6),
    ],
)
def test_raw_test_falls_back_to_the_baseline(
    tmp_path: Path, test: object, best: float | None, note: str, raw: float
) -> None:
    fml_root(tmp_path / "fml", "Causality_causalml", 0.5, 0.6)
    steps = [(True, 0.4)] if best is not None else [(False, None), (False, None)]
    agent_run(tmp_path / "agent", "Causality_causalml", steps, 0.5, best, len(steps), test)
    row = score_agent(tmp_path / "agent", tmp_path / "fml", explore=False)["Causality_causalml"]
    assert row["note"] == note and row["raw_test"] == pytest.approx(raw)
    assert row["Normalized Improvement"] == pytest.approx((0.6 - raw) / 0.6)
    if best is None:  # nothing validated: no curve gain, no best step, val side = baseline
        approx(
            row,
            {
                "AUC-over-steps": 0.0,
                "First-improvement step": NAN,
                "Late-gain fraction": NAN,
                "Best-improvement step": NAN,
                "Val-test |gap|": 0.0,
                "Valid step ratio": 0.0,
            },
        )
    else:
        assert row["Val-test |gap|"] == pytest.approx(abs((0.5 - 0.4) / 0.5 - (0.6 - raw) / 0.6))


def test_exploration_metrics_by_hand() -> None:
    base = np.zeros(2)
    three = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    found = exploration(three, base)
    assert found["Exploration Spread"] == pytest.approx((2 * math.sqrt(5) / 3 + math.sqrt(2) / 3) / 3, rel=1e-6)
    assert found["Exploration Uniqueness"] == 1.0  # every cosine distance > 0.015
    assert found["Exploration Reach"] == pytest.approx(math.sqrt(2))
    with_copy = exploration(np.array([[1, 0], [2, 0], [0, 1], [0, 0]], dtype=np.float32), base)
    assert (
        with_copy["Exploration Uniqueness"] == 3 / 4
    )  # [1,0] ~ [2,0] (distance 0); the zero vector is its own cluster
    assert with_copy["Exploration Reach"] == pytest.approx(2.0)
    assert exploration(np.array([[1, 0], [-1, 0]], dtype=np.float32), base)["Effective dim"] == pytest.approx(1.0)
    assert exploration(np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32), base)[
        "Effective dim"
    ] == pytest.approx(2.0)
    assert exploration(three[:1], base)["Effective dim"] == 0.0


def test_bench_score_cli_prints_fml_columns_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fml_root(tmp_path / "fml", "Generalization_domainbed", 0.25, 0.20)
    steps = [(True, 0.30), (False, None), (True, 0.28), (True, 0.40), (True, 0.40)]
    run = agent_run(
        tmp_path / "aide",
        "Generalization_domainbed",
        steps,
        0.25,
        0.40,
        6,
        info("ColoredMNIST_test_env2", "in_acc_mean", 0.33),
        tokens=2_500_000,
        seconds=5400,
    )
    for i, body in enumerate(["return x", "return x + 1", "return 2 * x"], start=1):
        write(
            run / "step_snapshots" / f"step_{i:04d}_code.json",
            {"workspace/Generalization_domainbed/repo/algo.py": f"def f(x):\n    {body}\n"},
        )
    assert main(["bench", "score", str(tmp_path / "aide"), "--fml-root", str(tmp_path / "fml"), "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    row = table["Generalization_domainbed"]
    approx(row, DOMAINBED)
    assert row["embedder"] in ("microsoft/graphcodebert-base", "sentence-transformers/all-MiniLM-L6-v2")
    assert row["Exploration Spread"] > 0 and 0 < row["Exploration Uniqueness"] <= 1 and row["Exploration Reach"] > 0
    assert (
        main(["bench", "score", str(tmp_path / "aide"), "--fml-root", str(tmp_path / "fml"), "--no-exploration"]) == 0
    )
    out = capsys.readouterr().out
    assert "Normalized Improvement" in out and "0.1300" in out and "AUC-over-steps" in out
    assert main(["bench", "score", str(tmp_path / "nothing"), "--fml-root", str(tmp_path / "fml")]) == 2


def test_ai_scientist_v2_final_test_lives_in_a_sibling_run(tmp_path: Path) -> None:
    fml_root(tmp_path / "fml", "Causality_causalml", 0.5, 0.6)
    agent = tmp_path / "ai_scientist_v2"
    run = agent_run(
        agent, "Causality_causalml", [(True, 0.4)], 0.5, 0.4, 1, info(*CAUSAL, 0.9)
    )  # its own test is ignored
    sibling = (
        run.parent / "20260101_000001_final_test" / "exp_final_test" / "run_final_test" / "execution_20260101_020000"
    )
    write(sibling / "test_info.json", info(*CAUSAL, 0.3))
    for skipped in ("_old", "20250101_deprecated"):  # never the run, never a test home
        write(
            run.parent / skipped / "exp_final_test" / "run_final_test" / "execution_1" / "test_info.json",
            info(*CAUSAL, 0.0),
        )
    row = score_agent(agent, tmp_path / "fml", explore=False)["Causality_causalml"]
    assert row["raw_test"] == pytest.approx(0.3) and row["Normalized Improvement"] == pytest.approx(0.5)
