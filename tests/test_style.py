"""The house style holds: ruff's rules (pyproject.toml) and its formatting, checked like any other behaviour."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ["aiscientist", "bench", "benchmarks", "scripts"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    return subprocess.run([ruff, *args], cwd=ROOT, capture_output=True, text=True)


def test_the_code_passes_ruff_check():
    done = _ruff("check", "--output-format", "concise", *CODE)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr


def test_everything_is_formatted():
    done = _ruff("format", "--check", ".")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
