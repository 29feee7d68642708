"""Issue #39 through benchmarks/areas.py: a 3-step `solve` of the hostile tiny task, run from the
CLI in bwrap, leaves nothing outside the sandbox's areas while its writes there were tried and failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.sandbox import bwrap_works

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable on this machine")
def test_a_hostile_solve_leaves_nothing_outside_its_areas(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "areas.py"), "--only", "solve", "--keep", str(tmp_path / "b")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    [row, summary] = rows
    assert row["scenario"] == "solve" and row["sandbox"] == "bwrap" and row["steps"] >= 3
    assert row["escaped"] == [] and row["verified"], row
    assert row["attempts_blocked"] > 0 and row["attempts"] >= row["attempts_blocked"], row
    assert summary["summary"] and summary["escaped"] == 0
