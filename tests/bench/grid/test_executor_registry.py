"""Grid executors are looked up by name (bench/grid/executors.py): the registry and the grid
spec name the same set, a wrong name is refused with the names it could be, and the pool runs."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from bench.grid.executors import EXECUTORS, ExecutorUnavailable, open_executor
from bench.grid.spec import GridConfig


def test_the_registry_and_the_grid_spec_name_the_same_executors() -> None:
    assert list(EXECUTORS) == list(get_args(GridConfig.model_fields["executor"].annotation))
    with pytest.raises(ExecutorUnavailable, match="unknown executor 'slurm'; choose one of pool, ray"):
        open_executor("slurm", None, [[0]])


def test_the_pool_by_name_runs_a_job_in_a_worker_pinned_to_its_cores() -> None:
    with open_executor("pool", None, [[0]]) as pool:
        assert pool.submit(sum, [1, 2, 3]).result(timeout=60) == 6


def test_without_workers_a_one_request_server_runs_one_cell_at_a_time() -> None:
    from bench.grid.runner import _model_slots

    def slots(model: str | None) -> int | None:
        return _model_slots(GridConfig(agents=["aide"], tasks=[Path("task.yaml")], model=model))

    assert slots("local/qwen2.5-coder-1.5b") == 1 and slots("offline") is None and slots(None) is None
