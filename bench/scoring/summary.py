"""A bench cell's summary, `CellPaths.result`: the run's own `RunResult` (ws/result.json, as
`experiment.finish` wrote it) and what the bench adds to it (the round, the task's kind, the
measured baselines, the best-so-far curve, diversity, judge labels, the rubric score)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from aiscientist.records.cell import CellPaths, cell_results
from aiscientist.records.result import RunResult
from bench.scoring.fml_metrics import Range

Direction = Literal["max", "min"]
# what cell summaries written before they embedded the run's result spelled at their top level
_LEGACY = {"completed": "steps_completed", "successful": "steps_successful", "best_val": "best_metric"}
_SHARED = ("task", "agent", "metric", "direction", "baseline", "best_step", "tokens", "cost", "wall_time_s")
_SHARED += ("stop_reason", "stop_detail", "ttfe_s", "experiments_per_hour")


class RunSummary(BaseModel):
    """`runs/<task>/<agent>/round_<k>/result.json`: everything the report needs from one run."""

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


def load_runs(results: Path) -> list[RunSummary]:
    """Every finished run's summary under RESULTS/runs/."""
    return [RunSummary.model_validate_json(p.read_text()) for p in cell_results(results)]
