"""Issue 39's root causes, one hostile test each through a product path (solve, resume,
the hidden test, a bench cell's engine): each failed on the code before the invariant."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from aiscientist.orchestrator.run import solve
from aiscientist.records.causes import FailureCause
from aiscientist.sandbox import bwrap_works
from aiscientist.task import TaskError, load_task
from aiscientist.util import untrusted
from aiscientist.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"
SANDBOX = "bwrap" if bwrap_works() else "local"


def _legacy_run(tmp_path: Path) -> Path:
    """A finished one-step run whose history is turned into the old git store."""
    run = tmp_path / "run"
    solve(TINY, run, model="offline", steps=1)
    shutil.rmtree(run / "state" / "snapshots")
    git = ["git", f"--git-dir={run / 'state' / 'submission.git'}", f"--work-tree={run / 'submission'}"]
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    subprocess.run([*git, "tag", "baseline"], check=True, capture_output=True)
    return run


def test_resume_runs_no_tool_on_a_handed_over_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _legacy_run(tmp_path)
    marker, tools = tmp_path / "git-ran", tmp_path / "bin"
    tools.mkdir()
    (tools / "git").write_text(f'#!/bin/sh\necho "$@" >> {marker}\nexit 1\n')
    (tools / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(TaskError, match="predates the snapshot store"):
        solve(None, run, model="offline", steps=2)
    assert not marker.exists(), marker.read_text()
    cli = subprocess.run(
        [sys.executable, "-m", "aiscientist", "solve", "--resume", str(run), "--model", "offline", "--steps", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert cli.returncode != 0 and "predates the snapshot store" in cli.stdout + cli.stderr
    assert not marker.exists()


def _postprocess_task(tmp_path: Path, train_extra: str, **changes: object) -> Workspace:
    """The tiny task as FML-bench shapes one: the protected evaluator runs as postprocess in the
    step's own tree (no score split); `train_extra` is appended to the agent's train.py."""
    spec = yaml.safe_load(TINY.read_text())
    for key in ("artifacts", "scorer", "score", "test_score"):
        spec.pop(key)
    spec |= {"repository": str(TINY.parent / "repo"), "postprocess_commands": ["python evaluate.py --split val"]}
    spec |= changes
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(spec))
    ws = Workspace.create(load_task(tmp_path / "task.yaml"), tmp_path / "run", sandbox=SANDBOX)
    train = ws.paths.submission / "train.py"
    train.write_text(train.read_text() + "\n" + textwrap.dedent(train_extra))
    return ws


FORGER = """
import json
import os
with open("json.py", "w") as planted:  # the evaluator's `import json` finds this first, once
    planted.write(
        "import os\\n"
        "forged = {'quadratic': {'means': {'mse_mean': 0.0, 'r2_mean': 1.0}}}\\n"
        "open('final_info.json', 'w').write(repr(forged).replace(\\"'\\", '\\"'))\\n"
        "os.remove(__file__)\\n"
        "def load(f): return [0.0]\\n"
        "def dump(obj, f, **kw): pass\\n"
    )
"""


def test_a_postprocess_evaluator_never_runs_on_what_the_step_planted(tmp_path: Path) -> None:
    ws = _postprocess_task(tmp_path, FORGER)
    record = ws.engine.run_step("tester", "plant a json.py the evaluator imports, which forges and removes itself")
    assert record.metric != 0.0, "the forged metric was accepted"
    assert not record.valid and record.cause == FailureCause.INTEGRITY and "json.py" in (record.error or "")


def test_declared_outputs_never_admit_code(tmp_path: Path) -> None:
    payload = """
    os.makedirs("out/pkg", exist_ok=True)
    for name in ("out/tool.py", "out/pkg/__init__.py", "out/hook.pth", "out/sitecustomize.py"):
        open(name, "w").write("print('imported')\\n")
    open("out/table.csv", "w").write("a,b\\n")
    """
    ws = _postprocess_task(
        tmp_path, "import os\n" + textwrap.dedent(payload), outputs=["out/**", "out/*", "weights.json"]
    )
    record = ws.engine.run_step("tester", "leave code among the declared outputs")
    assert not record.valid and record.cause == FailureCause.INTEGRITY
    assert "out/pkg/__init__.py" in (record.error or "") and "out/table.csv" not in (record.error or "")


DEEP = """
import json
import os
here = os.open(".", os.O_RDONLY)
for _ in range(10_000):
    os.mkdir("d", dir_fd=here)
    inner = os.open("d", os.O_RDONLY, dir_fd=here)
    os.close(here)
    here = inner
"""


def test_a_10000_deep_tree_in_the_hidden_test_copy_still_gives_a_result(tmp_path: Path) -> None:
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox=SANDBOX)
    train = ws.paths.submission / "train.py"
    train.write_text(train.read_text() + "\n" + DEEP)
    record = ws.engine.run_step("tester", "leave a deep tree")
    before = set(Path(tempfile.gettempdir()).glob("aisci-test-*"))
    test = ws.engine.run_test(record.step)  # removing the copy used to recurse and raise
    assert not test.success and "not checked" in (test.error or "")
    assert set(Path(tempfile.gettempdir()).glob("aisci-test-*")) <= before  # the copy is gone
    untrusted.remove_tree(tmp_path, "run")


def test_the_watcher_survives_a_10000_deep_tree(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    with ws.watch(flush_s=0.05):
        here = os.open(ws.paths.submission, os.O_RDONLY)
        for _ in range(10_000):
            os.mkdir("d", dir_fd=here)
            inner = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = inner
        os.close(here)
        (ws.paths.submission / "late.txt").write_text("seen\n")
        deadline = time.monotonic() + 10  # the observer watches 64 levels of it and reports the rest once
        while "submission/late.txt" not in _changed(ws) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert "submission/late.txt" in _changed(ws)  # the observer still watches after the deep tree
    events = [json.loads(line) for line in ws.paths.events.read_text().splitlines() if line.strip()]
    unwatched = [e["payload"] for e in events if e["kind"] == "watcher.unwatched"]
    assert len(unwatched) == 1 and "deeper than 64 folders" in unwatched[0]["error"]
    assert "Traceback" not in capfd.readouterr().err
    untrusted.remove_tree(tmp_path, "run")


def _changed(ws: Workspace) -> list[str]:
    """The paths the watcher has recorded as changed so far."""
    events = [json.loads(line) for line in ws.paths.events.read_text().splitlines() if line.strip()]
    return [c["path"] for e in events if e["kind"] == "files.changed" for c in e["payload"]["changes"]]
