"""Read one agent's results exactly as FML-bench `main` writes them (`AGENT/<Task>/<run>/summary.json`,
the final test, step snapshots; baselines and target files from the FML-bench root's `ml_tasks/<Task>/`),
and score them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.scoring.exploration import EXCLUDED, explore_steps
from bench.scoring.fml_metrics import RANGES, TaskMeta, TaskRun, ValStep, score

TEST_PATTERNS = ("*_final_test/run_final_test/execution_*", "final_test/run_final_test/execution_*")


class ResultsError(ValueError):
    """The result folder or the FML-bench root cannot be scored."""


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def canonical(info: Any, meta: TaskMeta) -> float | None:
    """`info[dataset]["means"][metric]` as a float, or None."""
    try:
        return float(info[meta.dataset]["means"][meta.metric])
    except (KeyError, TypeError, ValueError):
        return None


def constraint_violated(info: Any) -> bool:
    blocks = info.values() if isinstance(info, dict) else []
    return any(
        isinstance(b, dict) and isinstance(b.get(s), dict) and b[s].get("constraint_violated") is True
        for b in blocks
        for s in ("means", "final_info_dict")
    )


def run_folders(agent_root: Path, task: str) -> list[Path]:
    folder = agent_root / task
    if not folder.is_dir():
        return []
    return sorted(
        d for d in folder.iterdir() if d.is_dir() and not d.name.startswith("_") and not d.name.endswith("_deprecated")
    )


def main_run(agent_root: Path, task: str) -> Path | None:
    return next((d for d in run_folders(agent_root, task) if (d / "summary.json").is_file()), None)


def final_test(agent: str, agent_root: Path, task: str, run: Path, meta: TaskMeta) -> tuple[float | None, str]:
    """The final test's canonical metric and "ok", or None and why it earns no credit."""
    homes = [d for d in run_folders(agent_root, task) if d != run] if agent == "ai_scientist_v2" else [run]
    found = sorted(p for home in homes for pattern in TEST_PATTERNS for p in home.glob(pattern) if p.is_dir())
    if not found:
        return None, "no_final_test_dir"
    execution = found[-1]
    if sorted((execution / "records").glob("bug_test_*.json")):
        return None, "bug_test"
    if not (execution / "test_info.json").is_file():
        return None, "missing_test_info"
    info = load_json(execution / "test_info.json")
    if info is None:
        return None, "unreadable"
    if constraint_violated(info):
        return None, "constraint_violated"
    value = canonical(info, meta)
    return (value, "ok") if value is not None else (None, "metric_extraction_failed")


def task_meta(fml_root: Path, task: str) -> TaskMeta:
    """FML-bench's table entry for `task`, else the range an exported task carries."""
    if task in RANGES:
        return RANGES[task]
    config = load_json(fml_root / "ml_tasks" / task / "config.json") or {}
    if isinstance(config.get("aiscientist_range"), dict):
        return TaskMeta.model_validate(config["aiscientist_range"])
    raise ResultsError(
        f"{task}: no normalisation range (not an FML-bench task and its config.json has no aiscientist_range)"
    )


def read_run(agent_root: Path, task: str, fml_root: Path, meta: TaskMeta) -> tuple[TaskRun, Path]:
    """The scored inputs of an agent's run on `task`, and its run folder."""
    run = main_run(agent_root, task)
    if run is None:
        raise ResultsError(f"{agent_root / task}: no run folder with summary.json")
    summary = load_json(run / "summary.json")
    if not isinstance(summary, dict):
        raise ResultsError(f"{run / 'summary.json'}: unreadable")
    agent = summary.get("agent") or agent_root.name
    baselines = fml_root / "ml_tasks" / task / "baseline_results"
    test, status = final_test(agent, agent_root, task, run, meta)
    steps = [
        ValStep(success=(s.get("val_result") or {}).get("success") is True, primary_metric=s.get("primary_metric"))
        for s in summary.get("val_steps") or []
    ]
    return (
        TaskRun(
            task=task,
            baseline_val=canonical(load_json(baselines / "val_info.json"), meta),
            baseline_test=canonical(load_json(baselines / "test_info.json"), meta),
            baseline_primary_metric=summary.get("baseline_primary_metric"),
            best_val_metric=summary.get("best_val_metric"),
            total_steps=summary.get("total_steps") or 0,
            val_steps=steps,
            total_tokens=(summary.get("token_usage") or {}).get("total_tokens"),
            total_duration_seconds=summary.get("total_duration_seconds"),
            test=test,
            test_status=status,
        ),
        run,
    )


def run_exploration(run: Path, task: str, fml_root: Path, prefer: str) -> tuple[dict[str, float], str | None]:
    """The exploration metrics of a run's step snapshots, and the embedder used."""
    config = load_json(fml_root / "ml_tasks" / task / "config.json") or {}
    repo_dir = str(config.get("repo_dir", ""))
    repo = fml_root / repo_dir
    baselines = {
        tf: (repo / tf).read_text(errors="replace")
        for tf in config.get("target_files", [])
        if Path(tf).name not in EXCLUDED and (repo / tf).is_file()
    }
    snapshots = [load_json(p) or {} for p in sorted((run / "step_snapshots").glob("step_*_code.json"))]
    return explore_steps(baselines, snapshots, "/".join(repo_dir.split("/")[2:]), prefer)


def score_agent(
    agent_root: Path, fml_root: Path, embedder: str = "auto", explore: bool = True
) -> dict[str, dict[str, Any]]:
    """`{task: {column: value}}` for every task folder of `agent_root` holding a run."""
    if not agent_root.is_dir():
        raise ResultsError(f"{agent_root}: not a folder")
    if not (fml_root / "ml_tasks").is_dir():
        raise ResultsError(f"{fml_root}: not an FML-bench root (no ml_tasks/ folder)")
    tasks = sorted(d.name for d in agent_root.iterdir() if d.is_dir() and main_run(agent_root, d.name) is not None)
    if not tasks:
        raise ResultsError(f"{agent_root}: no <Task>/<run>/summary.json inside")
    table = {}
    for task in tasks:
        meta = task_meta(fml_root, task)
        run, folder = read_run(agent_root, task, fml_root, meta)
        found, name = run_exploration(folder, task, fml_root, embedder) if explore else (None, None)
        table[task] = {**score(run, meta, found), "embedder": name}
    return table
