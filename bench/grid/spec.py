"""A benchmark grid's shape: its settings and its cells (task × agent × round)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from aiscientist.records.cell import CellPaths


class GridConfig(BaseModel):
    agents: list[str] = Field(min_length=1)
    tasks: list[Path] = Field(min_length=1)
    rounds: int = Field(3, ge=1)
    steps: int = Field(100, ge=1)
    wall_time_s: float | None = Field(None, gt=0)  # every cell's wall-clock budget (--steps stays a cap)
    model: str | None = None
    judge_model: str | None = None
    sandbox: str = "auto"
    workers: int | None = Field(None, ge=1)
    cores_per_run: int | None = Field(None, ge=1)
    seed: int = 0
    executor: Literal["pool", "ray"] = "pool"
    address: str | None = None  # ray: an existing cluster (default: a local one)
    embedder: str = "auto"
    options: dict[str, dict[str, Any]] = {}
    tracking: str | None = None  # mlflow, mlflow=URI or wandb (aiscientist.tracking)
    tracking_parent: str | None = None  # the grid's MLflow parent run (set when the grid starts)


class RunSpec(BaseModel):
    task_path: Path
    task: str
    agent: str
    round: int

    def cell(self, out: Path) -> CellPaths:
        return CellPaths.of(out, self.task, self.agent, self.round)
