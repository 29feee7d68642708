"""StepLog: a run's step records read incrementally (the engine's ledger and the agents' view of the steps)."""

from __future__ import annotations

from pathlib import Path

from aiscientist.records.paths import RunPaths
from aiscientist.records.step import StepLog, StepRecord, load_steps


def _write(paths: RunPaths, n: int, metric: float | None, **fields) -> StepRecord:
    base = dict(step=n, agent="a", hypothesis=f"h{n}", started_at="", commands=[], returncodes=[], duration_s=1.0)
    base |= dict(backend="local", metric=metric, success=metric is not None, diff_path="", code_path="")
    record = StepRecord(**(base | fields))
    paths.step_dir(n).mkdir(parents=True, exist_ok=True)
    paths.step_record(n).write_text(record.model_dump_json(indent=1))
    return record


def test_reads_each_final_record_once_and_sees_recent_rewrites(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path)
    log = StepLog(paths)
    assert log.records() == []
    for n in range(1, 6):
        _write(paths, n, float(n))
        assert [r.step for r in log.records()] == list(range(1, n + 1))
    assert log.records() == load_steps(paths)
    # steps 1-3 are final: their files are not read again (garbage there changes nothing)
    paths.step_record(1).write_text("not json")
    # the newest record may still change (the watcher marks a step invalid right after it ends)
    _write(paths, 5, 5.0, valid=False, success=False, error="tampering")
    records = log.records()
    assert [r.step for r in records] == [1, 2, 3, 4, 5]
    assert records[0].metric == 1.0 and records[-1].valid is False
    assert len(log.final) == 3


def test_a_missing_record_ends_the_list_until_it_appears(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path)
    _write(paths, 1, 1.0)
    paths.step_dir(2).mkdir(parents=True)  # running (or crashed: its number is reused)
    log = StepLog(paths)
    assert [r.step for r in log.records()] == [1]
    _write(paths, 2, 2.0)
    _write(paths, 3, None, error="boom")
    assert [r.step for r in log.records()] == [1, 2, 3]
