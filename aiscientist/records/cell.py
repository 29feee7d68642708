"""Where everything lives in a bench results folder (`bench run --out OUT`): the grid,
one cell per task × agent × round (`CellPaths`), one shared baseline per task
(`BaselinePaths`). A cell's run folder is `ws/` (`RunPaths`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aiscientist.records.paths import RESULT, RunPaths

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


def _below_root(name: str) -> property:
    return property(lambda self: self.root / name)


@dataclass(frozen=True)
class CellPaths:
    """`OUT/runs/<task>/<agent>/round_<k>/`: one bench run and what the bench keeps beside it."""

    root: Path

    ws = _below_root(CELL_WS)
    result = _below_root(RESULT)  # the cell's summary, written last: the cell is finished
    error = _below_root(CELL_ERROR)
    timing = _below_root(CELL_TIMING)
    labels = _below_root(CELL_LABELS)
    judge = _below_root(CELL_JUDGE)
    grade = _below_root(CELL_GRADE)
    models = _below_root(CELL_MODELS)

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

    ws = _below_root(CELL_WS)
    record = _below_root(BASELINE_RECORD)
    lock = _below_root(LOCK)

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
