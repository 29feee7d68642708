"""Progress of a bench grid, read from the run folders alone (whichever executor runs
the cells): a live table of cells by default, one line per finished cell otherwise."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from aiscientist.records.accounting import best_step
from aiscientist.records.step import load_steps
from aiscientist.task import Task, load_task
from aiscientist.util.console import make_console
from aiscientist.util.humanize import num, plural
from bench.grid.spec import GridConfig, RunSpec

State = Literal["queued", "running", "done", "failed"]


class CellStatus(BaseModel):
    task: str
    agent: str
    round: int
    state: State
    steps: int
    best: float | None = None
    best_step: int | None = None
    note: str = ""


def cell_status(spec: RunSpec, task: Task, out: Path) -> CellStatus:
    cell = spec.cell(out)
    try:
        steps = load_steps(cell.run) if cell.run.experiments.is_dir() else []
    except (ValidationError, ValueError, OSError):
        steps = []  # a step record being written right now
    best = best_step(steps, task.metric_direction)
    if cell.result.is_file():
        state: State = "done"
        try:
            note = str(json.loads(cell.result.read_text()).get("error") or "")
        except (ValueError, OSError):
            note = ""  # written by another process right now
    elif cell.error.is_file():
        state, note = "failed", (cell.error.read_text().strip().splitlines() or [""])[-1]
    else:
        state, note = ("running" if cell.ws.is_dir() else "queued"), ""
    return CellStatus(
        task=spec.task,
        agent=spec.agent,
        round=spec.round,
        state=state,
        steps=len(steps),
        best=best.metric if best else None,
        best_step=best.step if best else None,
        note=note,
    )


def cell_line(cell: CellStatus, steps: int) -> str:
    best = "no successful step" if cell.best is None else f"best {num(cell.best)} at step {cell.best_step}"
    tail = f" · {cell.note[:120]}" if cell.note else ""
    return f"{cell.state}: {cell.task} · {cell.agent} · round {cell.round} · {cell.steps}/{steps} steps · {best}{tail}"


class GridProgress:
    """Used as `with GridProgress(...) as live: ... live.refresh()` by the runner. A live
    table on a terminal; `enabled=False` (or no terminal): one line per finished cell."""

    def __init__(
        self, specs: list[RunSpec], config: GridConfig, out: Path, enabled: bool = True, console: Console | None = None
    ):
        self.specs, self.config, self.out, self.enabled = specs, config, out, enabled
        self.console = console or make_console(stderr=True)
        self.tasks = {s.task: load_task(s.task_path) for s in specs}
        self.started = time.monotonic()
        self.live = None
        self._done: dict[Path, CellStatus] = {}
        self.reported: dict[Path, State] = {
            s.cell(out).root: "done" for s in specs if s.cell(out).result.is_file()
        }  # finished before

    def cells(self) -> list[CellStatus]:
        """Every cell's status; a finished cell's folder is read once, not every refresh."""
        cells = []
        for spec in self.specs:
            cell = self._done.get(spec.cell(self.out).root) or cell_status(spec, self.tasks[spec.task], self.out)
            if cell.state == "done":
                self._done[spec.cell(self.out).root] = cell
            cells.append(cell)
        return cells

    def table(self, cells: list[CellStatus]) -> Table:
        done = sum(c.state == "done" for c in cells)
        table = Table(
            title=f"bench: {done}/{plural(len(cells), 'cell')} finished · {time.monotonic() - self.started:.0f} s"
        )
        for column in ("task", "agent", "round", "state", "step", "best so far"):
            table.add_column(column)
        colours = {"done": "green", "failed": "red", "running": "yellow", "queued": "dim"}
        for c in cells:
            best = "–" if c.best is None else f"{num(c.best)} (step {c.best_step})"
            table.add_row(
                c.task,
                c.agent,
                str(c.round),
                f"[{colours[c.state]}]{c.state}[/]",
                f"{c.steps}/{self.config.steps}",
                best,
            )
        return table

    def refresh(self) -> None:
        cells = self.cells()
        if self.live is not None:
            self.live.update(self.table(cells))
            return
        for spec, cell in zip(self.specs, cells):
            if cell.state in ("done", "failed") and self.reported.get(spec.cell(self.out).root) != cell.state:
                self.reported[spec.cell(self.out).root] = cell.state
                self.console.print(cell_line(cell, self.config.steps), highlight=False, soft_wrap=True)

    def __enter__(self) -> GridProgress:
        if self.enabled and self.console.is_terminal:  # not a terminal: lines, not a table redrawn
            from rich.live import Live

            self.live = Live(self.table(self.cells()), console=self.console, refresh_per_second=2)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.refresh()
        if self.live is not None:
            self.live.__exit__(*exc)
