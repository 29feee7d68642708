"""Trees and files the experiment code leaves that used to crash the host side:
deep folders, undecodable names, deeply nested or linked metrics files. Each goes
through a real step of the tiny task in the sandbox; the step must be recorded."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from aiscientist.records.causes import FailureCause
from aiscientist.sandbox import bwrap_works
from aiscientist.task import load_task
from aiscientist.workspace import Workspace, verify_run

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


def _hostile(body: str) -> str:
    """train.py: the honest training, then `body` at module level."""
    return (TINY.parent / "repo" / "train.py").read_text() + "\n\n" + textwrap.dedent(body) + "\n"


BWRAP = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable on this machine")


def _step(tmp_path: Path, body: str, backend: str = "bwrap"):
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox=backend)
    (ws.paths.submission / "train.py").write_text(_hostile(body))
    record = ws.engine.run_step("attacker", "hostile tree")
    saved = json.loads(ws.paths.step_record(record.step).read_text())
    assert saved["step"] == record.step
    return ws, record


@BWRAP
def test_1500_nested_folders_make_the_step_invalid_not_a_crash(tmp_path: Path) -> None:
    ws, record = _step(
        tmp_path,
        """
        import os
        fd = os.open(".", os.O_RDONLY)
        for _ in range(1500):
            os.mkdir("n", dir_fd=fd)
            sub = os.open("n", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = sub
        os.close(fd)
        """,
    )
    assert not record.valid and record.cause == FailureCause.INTEGRITY
    assert "not checked (depth limit" in (record.error or "")
    assert "experiments/: 1 steps" in ws.refresh_map()
    (ws.paths.submission / "train.py").write_text((TINY.parent / "repo" / "train.py").read_text())
    honest = ws.engine.run_step("agent", "honest step")  # the deep tree was removed before it ran
    assert honest.valid and honest.success, honest.error
    assert not (ws.paths.submission / "n").exists()
    assert verify_run(ws.paths.root).clean


@BWRAP
def test_an_undecodable_code_file_name_is_recorded_escaped(tmp_path: Path) -> None:
    ws, record = _step(tmp_path, 'open(b"evil\\xff.py", "w").write("print(1)\\n")')
    assert not record.valid and r"evil\xff.py: created outside" in (record.error or "")
    assert verify_run(ws.paths.root).clean


@BWRAP
def test_a_metrics_file_that_is_a_link_is_a_violation_and_never_read(tmp_path: Path) -> None:
    ws, record = _step(tmp_path, 'import os\nos.symlink("forged.json", "final_info.json")')
    assert not record.valid and not record.success and record.metrics == {} and record.metric is None
    assert "final_info.json: the metrics file is a link" in (record.error or "")
    forged = ws.paths.submission / "forged.json"
    forged.write_text('{"quadratic": {"means": {"mse_mean": 0.0001, "r2_mean": 1.0}}}')
    reading = ws.engine.read_metrics(ws.paths.submission / "final_info.json")
    assert reading.cause == FailureCause.INTEGRITY and reading.metrics == {}
    assert "a symbolic link (never followed)" in (reading.error or "")


@BWRAP
def test_a_100k_deep_metrics_file_is_an_invalid_metrics_cause(tmp_path: Path) -> None:
    ws, _ = _step(tmp_path, "pass")
    metrics = ws.paths.submission / "final_info.json"
    metrics.write_text("[" * 100_000 + "]" * 100_000)
    reading = ws.engine.read_metrics(metrics)
    assert reading.cause == FailureCause.METRICS_FILE_INVALID
    assert "nested deeper than 64 levels" in (reading.error or "")
    metrics.write_text('{"quadratic": {"means": {"mse_mean": 0.5}}, "pad": "' + "x" * (11 << 20) + '"}')
    reading = ws.engine.read_metrics(metrics)
    assert reading.cause == FailureCause.METRICS_FILE_INVALID and "larger than 10485760 bytes" in (reading.error or "")
