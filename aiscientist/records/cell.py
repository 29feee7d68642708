"""Where everything lives in a bench results folder (`bench run --out OUT`): the grid,
one cell per task × agent × round (`CellPaths`), one shared baseline per task
(`BaselinePaths`). A cell's run folder is `ws/` (`RunPaths`); its summary, written last, is a
`CellSummary`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from aiscientist.records.accounting import Direction, Range
from aiscientist.records.paths import RESULT, RunPaths, below_root
from aiscientist.records.result import RunResult

RUNS = "runs"
BASELINES = "baselines"
REPORT = "report"  # `bench report`'s default output folder
GRID_FILE = "grid.json"  # the grid as last requested
CELL_WS = "ws"
CELL_ERROR = "error.txt"  # the traceback of a cell that failed
CELL_TIMING = "timing.json"  # wall time over the cell's sessions
CELL_LABELS = "labels.json"  # the judge's label of each successful step
CELL_JUDGE = "judge"  # the judge's own model-call log (a RunPaths root)
CELL_GRADE = "grade"  # a paper task's grading (`bench.paper.grading` names its files)
CELL_MODELS = "models_seeded.yaml"  # the models file with the cell's seed, for the aiscientist arms
ROUND_DIR = "round_{}"
BASELINE_RECORD = "baseline.json"
LOCK = ".lock"


@dataclass(frozen=True)
class CellPaths:
    """`OUT/runs/<task>/<agent>/round_<k>/`: one bench run and what the bench keeps beside it."""

    root: Path

    ws = below_root(CELL_WS)
    result = below_root(RESULT)  # the cell's summary, written last: the cell is finished
    error = below_root(CELL_ERROR)
    timing = below_root(CELL_TIMING)
    labels = below_root(CELL_LABELS)
    judge = below_root(CELL_JUDGE)
    grade = below_root(CELL_GRADE)
    models = below_root(CELL_MODELS)

    @classmethod
    def of(cls, out: Path, task: str, agent: str, round: int) -> CellPaths:
        return cls(out / RUNS / task / agent / ROUND_DIR.format(round))

    @property
    def run(self) -> RunPaths:
        return RunPaths(self.ws)

    @property
    def label(self) -> str:
        """`task/agent/round_k`."""
        return "/".join(self.root.parts[-3:])


@dataclass(frozen=True)
class BaselinePaths:
    """`OUT/baselines/<task>/`: the task's unchanged code, measured once for the grid."""

    root: Path

    ws = below_root(CELL_WS)
    record = below_root(BASELINE_RECORD)
    lock = below_root(LOCK)

    @classmethod
    def of(cls, out: Path, task: str) -> BaselinePaths:
        return cls(out / BASELINES / task)


def has_runs(out: Path) -> bool:
    return (out / RUNS).is_dir()


def task_folders(out: Path) -> list[Path]:
    """`OUT/runs/<task>` for every task that has a cell."""
    return sorted((out / RUNS).glob("*")) if has_runs(out) else []


def cell_folders(out: Path, task: str = "*", agent: str = "*") -> list[CellPaths]:
    """Every cell folder under OUT/runs (of one task or agent when named), in path order."""
    return [CellPaths(p) for p in sorted((out / RUNS).glob(f"{task}/{agent}/{ROUND_DIR.format('*')}"))]


def cell_results(out: Path) -> list[Path]:
    """The summary of every finished cell."""
    return [c.result for c in cell_folders(out) if c.result.is_file()]


def run_folder(folder: Path) -> Path | None:
    """The run folder at `folder`, or inside it when `folder` is a bench cell; None when neither."""
    for candidate in (folder, folder / CELL_WS):
        if RunPaths(candidate).is_run():
            return candidate
    return None


# what cell summaries written before they embedded the run's result spelled at their top level
_LEGACY = {"completed": "steps_completed", "successful": "steps_successful", "best_val": "best_metric"}
_SHARED = ("task", "agent", "metric", "direction", "baseline", "best_step", "tokens", "cost", "wall_time_s")
_SHARED += ("stop_reason", "stop_detail", "ttfe_s", "experiments_per_hour")


class CellSummary(BaseModel):
    """`CellPaths.result` (`runs/<task>/<agent>/round_<k>/result.json`): everything the bench
    report needs from one run, the run's own `RunResult` and what the bench adds to it (the round,
    the task's kind, the measured baselines, the best-so-far curve, diversity, judge labels, the
    rubric score)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    result: RunResult
    """The run's own result (its tokens and cost from the model-call log; its baseline the task's
    stated one, else the measured one)."""
    round: int
    """The round of the grid (1-based)."""
    kind: Literal["improve", "reproduce"] = "improve"
    """The task's kind: a metric to improve, or a paper to reproduce."""
    baseline_test: float | None = None
    """Hidden-test metric of the unchanged code, when measured."""
    has_test: bool = False
    """Whether the task has hidden test commands (then the test metric is the score)."""
    assigned: int
    """Steps the grid gave the run."""
    curve: list[float | None] = []
    """Best successful metric so far after each completed step."""
    experiment_time_s: float = 0.0
    """Seconds the steps' commands took, summed."""
    diversity: float | None = None
    """Mean distance of the successful steps' code embeddings to their centroid."""
    embedder: str | None = None
    """The embedder that measured the diversity."""
    diversity_note: str | None = None
    """Why the diversity was not measured when steps succeeded (no code embedder installed)."""
    labels: dict[str, str] = {}
    """Step number -> the judge's label, "academic" or "engineering"."""
    judge_tokens: int = 0
    """Tokens the contribution judge used."""
    rubric_score: float | None = None
    """A paper task's grade against its rubric (0..1)."""
    score_range: Range | None = None
    """The task's fixed normalisation range, when it has one."""
    error: str | None = None
    """What went wrong when the run did not end normally."""

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """A summary written before the run's result was embedded: its restated fields moved in."""
        if not isinstance(data, dict) or "result" in data:
            return data
        data = dict(data)
        result = {key: data.pop(key) for key in _SHARED if key in data}
        result |= {new: data.pop(old) for old, new in _LEGACY.items() if old in data}
        metric, error = data.pop("test_metric", None), data.pop("test_error", None)
        if metric is not None or error is not None:
            step = result.get("best_step") or 0
            result["test"] = {"step": step, "metric": metric, "error": error, "success": metric is not None}
            result["test"]["duration_s"] = 0.0
        return {**data, "result": result}

    @property
    def task(self) -> str:
        return self.result.task

    @property
    def agent(self) -> str:
        return self.result.agent

    @property
    def direction(self) -> Direction:
        """The metric's direction ("max" for a task without a metric)."""
        return self.result.direction or "max"

    @property
    def score(self) -> float | None:
        """The hidden-test metric when the task has one, else the validation best."""
        return self.result.test_metric if self.has_test else self.result.best_metric

    @property
    def score_baseline(self) -> float | None:
        return self.baseline_test if self.has_test and self.baseline_test is not None else self.result.baseline

    def cell(self, results: Path) -> CellPaths:
        return CellPaths.of(results, self.task, self.agent, self.round)


def load_summaries(results: Path) -> list[CellSummary]:
    """Every finished run's summary under RESULTS/runs/."""
    return [CellSummary.model_validate_json(p.read_text()) for p in cell_results(results)]
