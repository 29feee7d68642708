"""The ledger (`results.tsv`): one row per step, appended as each step ends, matching step.json."""

from __future__ import annotations

import json
from pathlib import Path

from aiscientist.config import load_config
from aiscientist.orchestrator import solve
from aiscientist.records import accounting, ledger
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import StepRecord
from aiscientist.task import load_task

TINY = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tiny" / "task.yaml"


def _step(n: int, metric: float | None, **fields) -> StepRecord:
    base = dict(step=n, agent="a", hypothesis=f"h{n}", started_at="", commands=[], returncodes=[], duration_s=1.25)
    base |= dict(backend="local", metric=metric, success=metric is not None, diff_path="", code_path="")
    return StepRecord(**(base | fields))


def test_statuses_follow_the_accounting():
    steps = [
        _step(1, 5.0),
        _step(2, 6.0),
        _step(3, 4.0, hypothesis="try\tlr=0.01\n\x1b[2J now"),
        _step(4, None, error="boom"),
        _step(5, 1.0, valid=False),
        _step(6, 4.0, repeat_of=3),
    ]
    rows = ledger.rows(steps, "min")
    assert [r[1] for r in rows] == ["improved", "kept", "improved", "failed", "invalid", "repeat"]
    assert [r[3] for r in rows] == ["5", "5", "4", "4", "4", "4"]
    assert "\t" not in rows[2][6] and "\n" not in rows[2][6] and "\x1b" not in rows[2][6]
    assert [r[1] for r in ledger.rows(steps[:1], None)] == ["kept"]  # no metric named: no best
    from_baseline = ledger.rows(steps, "min", baseline=4.5)  # steps 1 and 2 are worse than the unchanged code
    assert [r[1] for r in from_baseline][:3] == ["kept", "kept", "improved"]
    assert [r[3] for r in from_baseline][:3] == ["4.5", "4.5", "4"]
    for start in range(len(steps) + 1):  # the rows a ledger lacks are formatted alone, the same
        assert ledger.rows(steps, "min", 4.5, start=start) == from_baseline[start:]


def test_append_fills_missing_rows_once(tmp_path):
    paths = RunPaths(tmp_path)
    steps = [_step(1, 5.0), _step(2, 4.0)]
    ledger.append(paths, steps[:1], "min")
    ledger.append(paths, steps, "min")
    ledger.append(paths, steps, "min")
    lines = paths.ledger.read_text().splitlines()
    assert lines[0].split("\t") == list(ledger.COLUMNS) and len(lines) == 3


def test_offline_solve_ledger_matches_every_step(tmp_path):
    run_dir = tmp_path / "run"
    solve(load_task(TINY), run_dir, load_config([], ["sandbox=local"]), model="offline", steps=3)
    paths = RunPaths(run_dir)
    records = [StepRecord.model_validate_json(p.read_text()) for p in paths.step_records()]
    rows = ledger.read(paths)
    assert len(records) == len(rows) >= 3
    curve = accounting.best_so_far(records, "min")
    for record, row, best in zip(records, rows, curve):
        assert int(row["step"]) == record.step and int(row["tokens"]) == record.tokens
        assert row["metric"] == ("" if record.metric is None else f"{record.metric:.6g}")
        assert row["best_so_far"] == ("" if best is None else f"{best:.6g}")
        assert float(row["wall_s"]) == round(record.duration_s, 1)
        assert row["snapshot"] == record.code_sha256[:12] and row["snapshot"]
        assert row["hypothesis"] == " ".join(record.hypothesis.split())[:200] or row["hypothesis"].endswith("…")
        expected = "failed" if not record.success else ("repeat" if record.repeat_of is not None else None)
        assert expected is None or row["status"] == expected
    assert json.loads(paths.result.read_text())["steps_total"] == len(rows)
