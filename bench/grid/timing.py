"""A cell's wall time over its sessions (`CellPaths.timing`): what result.json reports, what a
wall-time budget (`bench run --wall-time`) counts, and the cell's first start (TTFE counts from it)."""

from __future__ import annotations

import json
import time

from aiscientist.records.cell import CellPaths


class Timing:
    """Wall time of a run over its sessions (`CellPaths.timing`). A session that was
    killed is counted up to its last step record."""

    def __init__(self, cell: CellPaths):
        cell.root.mkdir(parents=True, exist_ok=True)
        self.path = cell.timing
        state = json.loads(self.path.read_text()) if self.path.is_file() else {"wall_time_s": 0.0, "open_since": None}
        if state.get("open_since") is not None:
            ends = [p.stat().st_mtime for p in cell.run.step_records()]
            state["wall_time_s"] += max(0.0, max(ends, default=state["open_since"]) - state["open_since"])
        self.wall, self.started = state["wall_time_s"], time.time()
        self.first_started: float = state.get("first_started") or self.started  # the cell's start: TTFE counts from it
        self._write(self.started)

    def _write(self, open_since: float | None) -> None:
        state = {"wall_time_s": self.wall, "open_since": open_since, "first_started": self.first_started}
        self.path.write_text(json.dumps(state))

    def elapsed(self) -> float:
        """The run's wall time so far, earlier sessions included."""
        return self.wall + time.time() - self.started

    def close(self) -> float:
        self.wall += time.time() - self.started
        self._write(None)
        return self.wall
