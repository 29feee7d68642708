"""Reproduction runs: fresh copy, sandbox, log, time limit, produced files."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

import pytest

from aiscientist.sandbox import bwrap_works, get_sandbox
from bench.paper.reproduce import reproduce, snapshot
from tests.sandbox_backends import BACKENDS as ALL_BACKENDS

BACKENDS = [
    "local",
    pytest.param("bwrap", marks=pytest.mark.skipif(not bwrap_works(), reason="bubblewrap unusable here")),
]
ISOLATED = ALL_BACKENDS[1:]  # bwrap and docker


def _submission(tmp_path: Path, script: str) -> Path:
    sub = tmp_path / "submission"
    (sub / "data").mkdir(parents=True)
    (sub / "data" / "keep.txt").write_text("unchanged\n")
    (sub / "data" / "edit.txt").write_text("before\n")
    (sub / "data" / "touch.txt").write_text("same content\n")
    (sub / "grade.json").write_text("{}")  # left by an earlier grading: not copied
    (sub / "reproduce.sh").write_text(script)
    return sub


SCRIPT = """set -e
echo "starting reproduction"
mkdir -p results
echo '{"acc": 0.9}' > results/metrics.json
echo after > data/edit.txt
sleep 1.1
touch data/touch.txt
test ! -e grade.json
echo "done"
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_reproduce_records_log_timing_and_produced_files(tmp_path: Path, backend: str) -> None:
    sub = _submission(tmp_path, SCRIPT)
    before = snapshot(sub)
    result = reproduce(sub, tmp_path / "work", timeout_s=60, sandbox=get_sandbox(backend))
    assert result.ran and result.returncode == 0 and not result.timed_out and result.error is None
    assert result.backend == backend
    assert result.created == ["results/metrics.json"]
    assert result.changed == ["data/edit.txt", "data/touch.txt"]  # content change, and a new mtime alone
    assert result.log_path.read_text().splitlines() == ["starting reproduction", "done"]
    assert 1.0 <= result.duration_s < 30
    assert abs(datetime.fromisoformat(result.started_at).timestamp() - time.time()) < 60
    assert snapshot(sub) == before  # the submission itself is untouched
    assert "copy_dir" not in result.model_dump()


def test_reproduce_stops_at_the_time_limit(tmp_path: Path) -> None:
    sub = _submission(tmp_path, "echo started\nsleep 60 &\nsleep 60\necho never\n")
    start = time.monotonic()
    result = reproduce(sub, tmp_path / "work", timeout_s=1.5, sandbox=get_sandbox("auto"))
    assert time.monotonic() - start < 20
    assert result.timed_out and result.ran and result.error and "timed out" in result.error
    log = result.log_path.read_text()
    assert "started" in log and "never" not in log and "timed out after 1.5s" in log


def test_failing_script_is_recorded(tmp_path: Path) -> None:
    sub = _submission(tmp_path, "echo partial > partial.txt\npython -c 'import sys; sys.exit(3)'\n")
    result = reproduce(sub, tmp_path / "work", timeout_s=30, sandbox=get_sandbox("auto"))
    assert result.ran and result.returncode == 3 and "exited 3" in (result.error or "")
    assert result.created == ["partial.txt"]


def test_missing_script_means_no_run(tmp_path: Path) -> None:
    sub = _submission(tmp_path, "")
    os.remove(sub / "reproduce.sh")
    result = reproduce(sub, tmp_path / "work", timeout_s=30)
    assert not result.ran and result.error == "the submission has no reproduce.sh at its root"
    assert result.problem == "no reproduction ran: the submission has no reproduce.sh at its root"
    assert result.produced == set()


class _BrokenSandbox:
    """A backend whose process cannot be started (fault injection: e.g. its binary vanished)."""

    name = "broken"

    def run(self, commands, cwd, timeout, writable):
        raise FileNotFoundError(2, "No such file or directory", "bwrap")


def test_script_that_cannot_start_means_no_run(tmp_path: Path) -> None:
    sub = _submission(tmp_path, "echo hi\n")
    result = reproduce(sub, tmp_path / "work", timeout_s=30, sandbox=_BrokenSandbox())
    assert (
        not result.ran
        and result.problem
        == "no reproduction ran: reproduce.sh failed to start: [Errno 2] No such file or directory: 'bwrap'"
    )


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap unusable here")
def test_bwrap_reproduction_cannot_write_outside_its_copy(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    sub = _submission(tmp_path, f"echo hacked > {outside} || echo blocked\n")
    result = reproduce(sub, tmp_path / "work", timeout_s=30, sandbox=get_sandbox("bwrap"))
    assert result.ran and not outside.exists()  # inside, /tmp is a private tmpfs: the write landed there or failed


def test_grade_never_falls_back_to_running_reproduce_sh_on_the_host(tmp_path: Path) -> None:
    """Where bubblewrap cannot create namespaces, `grade` (sandbox auto) refuses to run the
    submission's script instead of running it unisolated on the host."""
    import subprocess
    import sys

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\nexit 1\n")  # a bwrap that cannot create namespaces
    (fake / "bwrap").chmod(0o755)
    marker = tmp_path / "ran_on_the_host"
    sub = _submission(tmp_path, f"touch {marker}\n")
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "paper.md").write_text("# p\n")
    leaf = {"id": "a", "requirements": "runs", "weight": 1, "task_category": "Code Execution", "sub_tasks": []}
    (paper / "rubric.json").write_text(json.dumps({"id": "r", "requirements": "r", "weight": 1, "sub_tasks": [leaf]}))
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "grade", str(sub), "--paper", str(paper)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "no isolating sandbox" in done.stderr and "--sandbox local" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("backend", ISOLATED)
def test_a_reproduction_leaves_no_process_and_writes_nothing_outside(tmp_path: Path, backend: str) -> None:
    """Children that reproduce.sh detaches are dead when it returns, so nothing changes the copy
    between the grader's snapshot and its reading; a write outside the copy never lands (#27)."""
    outside = tmp_path / "outside"
    script = (
        f"(setsid sh -c 'sleep 2; echo late > late.txt; echo x > {outside}' </dev/null >/dev/null 2>&1 &)\n"
        "nohup sh -c 'sleep 2; echo late > late2.txt' >/dev/null 2>&1 &\n"
        f"echo now > {outside} 2>/dev/null; echo done\n"
    )
    result = reproduce(_submission(tmp_path, script), tmp_path / "work", timeout_s=60, sandbox=get_sandbox(backend))
    assert result.ran and result.returncode == 0
    time.sleep(3)
    assert not (result.copy_dir / "late.txt").exists() and not (result.copy_dir / "late2.txt").exists()
    assert not outside.exists()
