"""The first run works however the user's Python is set up: `python` inside the sandbox is
the interpreter that runs aiscientist, wherever it lives (a venv under /tmp, pyenv-style
shims in a hidden home folder, a venv inside the project folder). The installed wheel in
a fresh venv is tests/test_wheel.py."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sandbox_backends import BACKENDS

TINY = Path(__file__).parents[1] / "fixtures" / "tiny"
pytestmark = pytest.mark.slow
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def _venv(where: Path) -> Path:
    """A fresh venv that imports what the running interpreter has (a `.pth` adding its
    site folders), so no dependency install is needed; its `python` is the one used."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    found = sorted(where.glob("lib/python*/site-packages"))
    lines = [f"import site; site.addsitedir({folder!r})" for folder in site.getsitepackages()]
    (found[0] / "outer_env.pth").write_text("\n".join(lines) + "\n")
    return where / "bin" / "python"


def venv_under_tmp(base: Path) -> tuple[list[str], dict[str, str], Path]:
    python = _venv(base / "venv")
    return [str(python)], {"PATH": f"{python.parent}:{SYSTEM_PATH}"}, base


def pyenv_shims(base: Path) -> tuple[list[str], dict[str, str], Path]:
    """`python` is a shim script in a hidden home folder that execs the real interpreter."""
    shims = base / "home" / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    for name in ("python", "python3"):
        (shims / name).write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        (shims / name).chmod(0o755)
    return ["python"], {"PATH": f"{shims}:{SYSTEM_PATH}", "HOME": str(base / "home")}, base


def venv_in_project(base: Path) -> tuple[list[str], dict[str, str], Path]:
    project = base / "project"
    python = _venv(project / ".venv")
    return [str(python)], {"PATH": f"{python.parent}:{SYSTEM_PATH}"}, project


SETUPS: dict[str, Callable[[Path], tuple[list[str], dict[str, str], Path]]] = {
    "venv-under-tmp": venv_under_tmp,
    "pyenv-shims": pyenv_shims,
    "venv-in-project": venv_in_project,
}


def _env(extra: dict[str, str]) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PATH")}
    return kept | {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"} | extra


@pytest.mark.parametrize("backend", [b for b in BACKENDS if getattr(b, "values", [b])[0] != "local"])
@pytest.mark.parametrize("setup", SETUPS)
def test_baseline_and_solve_succeed_from_every_python_setup(setup: str, backend: str, tmp_path: Path) -> None:
    python, extra, cwd = SETUPS[setup](tmp_path)
    shutil.copytree(TINY, cwd / "tiny")
    env = _env(extra)
    base = [*python, "-m", "aiscientist"]
    measured = subprocess.run(
        [*base, "baseline", "tiny/task.yaml", "--sandbox", backend, "--run-dir", "base"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert measured.returncode == 0, measured.stdout + measured.stderr
    assert "command not found" not in measured.stdout + measured.stderr
    solved = subprocess.run(
        [
            *base,
            "solve",
            "tiny/task.yaml",
            "--model",
            "offline",
            "--steps",
            "2",
            "--sandbox",
            backend,
            "--run-dir",
            "run",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert solved.returncode == 0, solved.stdout + solved.stderr
    result = json.loads((cwd / "run" / "result.json").read_text())
    assert result["steps_total"] == 2 and result["steps_successful"] == 2, result
