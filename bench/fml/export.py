"""Our `bench run` results in FML-bench main's terms: its table rows computed directly
(`fml_rows`), and the same runs written in its result layout (`export_results`), so that
`bench score OUT/<agent> --fml-root OUT` (or FML-bench's own scorer) reproduces `fml_rows`.
Per (agent, task) the best round is the run FML-bench scores; the other rounds are exported
with a leading `_`, which FML-bench skips.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiscientist.records.accounting import successful
from aiscientist.records.cell import CellPaths, CellSummary, load_summaries
from aiscientist.records.step import StepRecord, load_steps
from aiscientist.task import Task, expand_globs
from bench.fml.results import ResultsError
from bench.scoring.exploration import EXCLUDED, explore_steps
from bench.scoring.fml_metrics import ROW_KEYS, TaskMeta, TaskRun, ValStep, plain, range_of, score, shown
from bench.scoring.metrics import best_round, group_by
from bench.scoring.report import markdown


@dataclass
class Cell:
    """One agent's exported run on one task."""

    task: Task
    summary: CellSummary
    steps: list[StepRecord]
    ws: Path
    others: list[Path]  # the other rounds' folders

    @property
    def key(self) -> str:
        return f"workspace/{self.task.name}/repo"


def cells(results: Path) -> dict[str, dict[str, Cell]]:
    """`{agent: {task: Cell}}` for every improve task of a `bench run` folder."""
    runs = load_summaries(results)
    if not runs:
        shown = CellPaths.of(Path(), "<task>", "<agent>", "<k>").result
        raise ResultsError(f"{results}: no {shown} (is it a `bench run --out` folder?)")
    groups = group_by([s for s in runs if s.kind == "improve"], lambda s: (s.agent, s.task))
    found: dict[str, dict[str, Cell]] = {}
    for (agent, name), rounds in groups.items():
        best = best_round(rounds) or min(rounds, key=lambda s: s.round)
        ws = best.cell(results).run
        task = Task.model_validate_json(ws.task_record.read_text())
        others = [s.cell(results).root for s in rounds if s is not best]
        found.setdefault(agent, {})[name] = Cell(task, best, load_steps(ws), ws.root, others)
    return found


def task_meta(task: Task) -> TaskMeta:
    """FML-bench's entry for the task (our FML-CPU-8 ones included), else its `score_range`."""
    assert task.metric is not None  # only improve tasks are exported
    found = range_of(task.name, task.metric.direction, task.score_range)
    if found is None:
        raise ResultsError(
            f"{task.name}: no normalisation range; add score_range: {{p_best: ..., p_worst: ... | baseline}} to its "
            "task.yaml"
        )
    return TaskMeta(dataset=task.metric.dataset, metric=task.metric.key, **found.model_dump())


def task_run(cell: Cell) -> TaskRun:
    s = cell.summary
    r = s.result
    status = "ok" if r.test_metric is not None else ("bug_test" if s.has_test and r.test_error else "no_final_test_dir")
    return TaskRun(
        task=cell.task.name,
        baseline_val=r.baseline,
        baseline_test=s.baseline_test,
        baseline_primary_metric=r.baseline,
        best_val_metric=r.best_metric,
        total_steps=len(cell.steps),
        val_steps=[
            ValStep(success=successful(step), primary_metric=step.metric if successful(step) else None)
            for step in cell.steps
        ],
        total_tokens=r.tokens,
        total_duration_seconds=r.wall_time_s,
        test=r.test_metric,
        test_status=status,
    )


def baseline_files(task: Task) -> dict[str, str]:
    """The target files at baseline (FML-bench leaves split_config.json and notes.txt out)."""
    rels = [
        r
        for r in expand_globs(task.repository, task.editable_globs)
        if task.is_editable(r) and Path(r).name not in EXCLUDED
    ]
    return {rel: (task.repository / rel).read_text(errors="replace") for rel in rels}


def snapshot(cell: Cell, step: StepRecord) -> dict[str, str]:
    code = cell.ws / step.code_path
    return {f"{cell.key}/{rel}": (code / rel).read_text(errors="replace") for rel in expand_globs(code, ["**/*"])}


def explore(cell: Cell, prefer: str) -> tuple[dict[str, float], str | None]:
    return explore_steps(baseline_files(cell.task), [snapshot(cell, step) for step in cell.steps], "repo", prefer)


def fml_rows(
    results: Path, embedder: str = "auto", explore_code: bool = True, skip_unranged: bool = False
) -> dict[str, dict[str, dict[str, Any]]]:
    """`{agent: {task: FML-bench row}}` computed from our run records; tasks without a
    normalisation range are an error, or left out with `skip_unranged`."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for agent, by_task in cells(results).items():
        for name, cell in by_task.items():
            if (
                skip_unranged
                and range_of(name, cell.task.metric.direction if cell.task.metric else "max", cell.task.score_range)
                is None
            ):
                continue
            found, embedder_name = explore(cell, embedder) if explore_code else (None, None)
            table.setdefault(agent, {})[name] = {
                **score(task_run(cell), task_meta(cell.task), found),
                "embedder": embedder_name,
            }
    return table


def write_fml_table(results: Path, out: Path) -> Path:
    """`out/fml_bench.json` ({agent: {task: row}}, null where undefined) and a markdown
    copy: FML-bench main's table of every ranged task, beside our report."""
    table = {
        agent: {task: plain(row) for task, row in rows.items()}
        for agent, rows in fml_rows(results, skip_unranged=True).items()
    }
    (out / "fml_bench.json").write_text(json.dumps(table, indent=1))
    lines = ["# FML-bench main's metrics", ""]
    for agent, rows in table.items():
        body = [[column, *(shown(row.get(column)) for row in rows.values())] for column in ROW_KEYS]
        lines += [f"## {agent}", "", markdown((["column", *rows], body)), ""]
    (out / "fml_bench.md").write_text("\n".join(lines))
    return out / "fml_bench.json"


def export_results(results: Path, out: Path) -> list[str]:
    """Write every agent's runs in FML-bench's layout under `out`; returns the agents."""
    if out.exists() and any(out.iterdir()):
        raise ResultsError(f"{out}: already exists and is not empty")
    found = cells(results)
    for agent, by_task in found.items():
        for name, cell in by_task.items():
            meta = task_meta(cell.task)
            _write_task(out, cell, meta)
            run = out / agent / name / f"round_{cell.summary.round}"
            _write_run(run, cell, meta)
            for other in cell.others:
                _write_json(
                    out / agent / name / f"_{other.name}" / "summary.json",
                    {"agent": agent, "note": "not the best round"},
                )
    return sorted(found)


def _info(meta: TaskMeta, value: float | None) -> dict[str, Any]:
    return {
        meta.dataset: {
            "means": {meta.metric: value},
            "stderrs": {},
            "final_info_dict": {meta.metric.removesuffix("_mean"): [value]},
        }
    }


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def _write_task(out: Path, cell: Cell, meta: TaskMeta) -> None:
    folder = out / "ml_tasks" / cell.task.name
    if (folder / "config.json").is_file():
        return  # another agent's run wrote it already
    baselines = baseline_files(cell.task)
    config = {
        "repo_dir": cell.key,
        "target_files": sorted(baselines),
        "metric": meta.metric,
        "metric_direction": meta.direction,
        "aiscientist_range": meta.model_dump(),
    }
    _write_json(folder / "config.json", config)
    for name, value in (
        ("val_info.json", cell.summary.result.baseline),
        ("test_info.json", cell.summary.baseline_test),
    ):
        if value is not None:
            _write_json(folder / "baseline_results" / name, _info(meta, value))
    for rel, text in baselines.items():
        target = out / cell.key / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _write_run(run: Path, cell: Cell, meta: TaskMeta) -> None:
    s = cell.summary
    r = s.result
    steps = []
    for step in cell.steps:
        ok = successful(step)
        steps.append(
            {
                "step_id": step.step,
                "idea_description": step.hypothesis,
                "edit_success": True,
                "val_result": {"success": ok, "primary_metric": step.metric if ok else None, "error": step.error},
                "primary_metric": step.metric if ok else None,
                "token_usage": {"total_tokens": step.tokens},
                "step_duration_seconds": step.duration_s,
            }
        )
        _write_json(run / "step_snapshots" / f"step_{step.step:04d}_code.json", snapshot(cell, step))
    summary = {
        "benchmark": cell.task.name,
        "agent": s.agent,
        "task_config": {
            "metric": meta.metric,
            "metric_direction": meta.direction,
            "repo_dir": cell.key,
            "target_files": sorted(baseline_files(cell.task)),
        },
        "baseline_primary_metric": r.baseline,
        "total_steps": len(cell.steps),
        "total_duration_seconds": r.wall_time_s,
        "best_val_metric": r.best_metric,
        "test_result": {"primary_metric": r.test_metric, "error": r.test_error} if s.has_test else None,
        "val_steps": steps,
        "token_usage": {"total_tokens": r.tokens},
    }
    _write_json(run / "summary.json", summary)
    execution = run / "final_test" / "run_final_test" / "execution_0"
    if r.test_metric is not None:
        _write_json(execution / "test_info.json", _info(meta, r.test_metric))
    elif s.has_test and r.test_error:
        _write_json(execution / "records" / "bug_test_0.json", {"phase": "test", "error": {"stderr": r.test_error}})
