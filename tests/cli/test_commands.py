"""`aiscientist` names nothing of `bench`: its own commands are its own, the bench's come from
the `aiscientist.commands` entry points pyproject.toml declares (installed with the package)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

from aiscientist.cli.app import COMMANDS, PLUGINS, installed_commands

ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_registers_its_own_commands_and_aiscientist_names_none() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][PLUGINS]
    assert declared == {"bench": "bench.cli.bench", "grade": "bench.cli.grade", "rubric": "bench.cli.rubric"}
    own = [name for name in COMMANDS if COMMANDS.get(name).startswith("aiscientist.")]
    assert {name: installed_commands().get(name) for name in declared} == declared
    assert not set(own) & set(declared)
    strings = [
        f"{path.relative_to(ROOT)}: {node.value}"
        for path in sorted((ROOT / "aiscientist").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("bench.")
    ]
    assert strings == []


def test_bench_and_grade_run_through_python_m_aiscientist() -> None:
    for command, shown in ((["bench", "agents"], "| aide | aide |"), (["grade", "--help"], "reproduce.sh")):
        done = subprocess.run(
            [sys.executable, "-m", "aiscientist", *command], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0 and shown in done.stdout, done.stderr
