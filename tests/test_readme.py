"""README.md stays short and true: every command in its code blocks runs from a folder outside
the checkout (the cheap ones for real, the long-running ones as a parse of their arguments and
their `--help`), CI runs exactly its set-up and test commands, and every page under docs/ is
linked and every link leads to a file."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SIZE_LIMIT = 10 * 1024
PROGRAM = ["python", "-m", "aiscientist"]
SETUP = ["bash", "scripts/setup.sh"]
TEST = ["python", "-m", "pytest"]
INSTALL = ["pip", "install"]
FIXTURE = ROOT / "tests" / "fixtures" / "tiny"  # stands in for the README's REPO (its task.yaml beside repo/)

# one subprocess parses every command and asks for the help of its subcommand, as the CLI would
DRY = r"""
import contextlib, io, json, sys
from aiscientist.cli.app import build_parser

problems = []
for argv in json.loads(sys.argv[1]):
    words = []
    for word in argv:
        if word.startswith("-") or len(words) == 2:
            break
        words.append(word)
    checks = [(argv, "--help" in argv), ([*words, "--help"], True)]
    for args, want_help in checks[: 1 if "--help" in argv else 2]:
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                parsed = build_parser().parse_args(args)
            ok = not want_help and hasattr(parsed, "handler")
        except SystemExit as stop:
            ok = want_help and stop.code == 0 and out.getvalue().startswith("usage: aiscientist")
        if not ok:
            problems.append({"argv": args, "stdout": out.getvalue()[-500:], "stderr": err.getvalue()[-500:]})
print(json.dumps(problems))
"""


def readme_commands() -> list[list[str]]:
    """The commands of README.md's bash blocks: continuation lines joined, comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL)
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(words)
    return commands


def _env() -> dict[str, str]:
    """This checkout's code, whatever the current folder is."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )


def _cheap(args: list[str]) -> bool:
    """Commands quick enough to run for real."""
    return "--help" in args or args[:2] in (["task", "show"], ["bench", "agents"])


def test_readme_is_short():
    assert README.stat().st_size <= SIZE_LIMIT, f"README.md is {README.stat().st_size} bytes (at most {SIZE_LIMIT})"


def test_every_readme_command_is_known():
    """A new kind of command in the README needs a way to be checked here."""
    unknown = [c for c in readme_commands() if not any(c[: len(k)] == k for k in (PROGRAM, SETUP, TEST, INSTALL))]
    assert not unknown, f"commands this test does not know how to check: {unknown}"
    assert [c for c in readme_commands() if c[:3] == PROGRAM], "the README shows no aiscientist command"


def test_ci_runs_the_readme_setup_and_test_commands():
    ci = [shlex.split(line, comments=True) for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    setups = [c for c in readme_commands() if c[:2] == SETUP]
    tests = [c for c in readme_commands() if c[:3] == TEST]
    assert len(setups) == 1 and len(tests) == 1, "the README has one set-up and one test command"
    assert any(line[: len(setups[0])] == setups[0] for line in ci), f".ci/run does not run {shlex.join(setups[0])}"
    assert tests[0] in ci, f".ci/run does not run exactly {shlex.join(tests[0])}"
    assert (ROOT / "scripts" / "setup.sh").is_file()
    installs = [c for c in readme_commands() if c[:2] == INSTALL]
    assert all(c[2:] == ["."] for c in installs), f"install the checkout: {installs}"


def test_readme_commands_run_from_any_folder(tmp_path):
    commands = [c[3:] for c in readme_commands() if c[:3] == PROGRAM]
    shutil.copytree(FIXTURE, tmp_path / "REPO")
    cheap = [args for args in commands if _cheap(args)]
    assert ["task", "show", "REPO/task.yaml"] in cheap and ["bench", "agents"] in cheap
    jobs = [["-m", "aiscientist", *args] for args in cheap] + [["-c", DRY, json.dumps(commands)]]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(lambda argv: _run(argv, tmp_path), jobs))
    for args, result in zip(cheap, results):
        assert result.returncode == 0, f"{shlex.join(args)} failed in {tmp_path}:\n{result.stdout}\n{result.stderr}"
    shown = results[cheap.index(["task", "show", "REPO/task.yaml"])].stdout
    assert "tiny-quadratic" in shown and "0.6072" in shown
    assert "aiscientist" in results[cheap.index(["bench", "agents"])].stdout
    dry = results[-1]
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == [], f"README commands the CLI refuses: {dry.stdout}"


def _links(page: Path) -> list[Path]:
    """The files a markdown page links to (web addresses and in-page anchors left out)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", page.read_text())
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t)]
    return [(page.parent / t).resolve() for t in local if t]


def test_every_link_leads_to_a_file():
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        missing = [str(p) for p in _links(page) if not p.exists()]
        assert not missing, f"{page.name} links to missing files: {missing}"


def test_every_docs_page_is_linked():
    linked = {p for page in [README, *DOCS.glob("*.md")] for p in _links(page) if p != page.resolve()}
    orphans = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert not orphans, f"docs pages linked from neither the README nor another page: {orphans}"
