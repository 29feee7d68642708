"""The shared `bash` tool: what its sandbox mounts let a command change or reach,
for a baseline (`agent` role) and for AiScientist's implementation specialist and
helper. Real bubblewrap, real workspace, a real loopback server."""

from __future__ import annotations

import hashlib
import socket
import threading
from pathlib import Path

import pytest

from aiscientist.agent.shell import run_shell, writable_areas
from aiscientist.config import RunConfig
from aiscientist.orchestrator import solve
from aiscientist.sandbox import bwrap_works
from aiscientist.task import load_task
from aiscientist.workspace import Workspace
from aiscientist.workspace.eventlog import read_events

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests/fixtures/tiny/task.yaml"

pytestmark = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap unusable here")


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Workspace:
    return Workspace.create(load_task(TASK), tmp_path_factory.mktemp("shell") / "ws", sandbox="bwrap")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ok(text: str) -> bool:
    return text.startswith("[exit 0]")


@pytest.mark.parametrize("role", ["agent", "implementation", "helper"])
def test_no_role_can_write_a_protected_file(ws: Workspace, role: str):
    before = digest(ws.paths.submission / "evaluate.py")
    assert not ok(run_shell(ws, role, "echo 'print(1)' >> evaluate.py"))
    assert not ok(run_shell(ws, role, "rm -f data.py && echo gone"))
    assert not ok(run_shell(ws, role, "mv evaluate.py x.py"))
    assert digest(ws.paths.submission / "evaluate.py") == before and (ws.paths.submission / "data.py").is_file()


def test_each_role_writes_only_its_own_areas(ws: Workspace):
    root = ws.paths.root
    assert writable_areas(ws, "implementation") == [ws.paths.submission]
    assert ok(run_shell(ws, "implementation", "echo '# note' >> config.py"))  # an editable file
    for target in ("../scratch/impl.txt", "../plan/p.md", "../task/x", "../paper_analysis/x.md", "../logs/exp_log.md"):
        assert not ok(run_shell(ws, "implementation", f"echo x > {target}")), target
    assert not (root / "scratch/impl.txt").exists() and not (root / "task/x").exists()
    assert ok(run_shell(ws, "helper", "echo hi > ../scratch/helper.txt"))
    assert not ok(run_shell(ws, "helper", "echo x >> config.py"))  # the helper only reads submission/
    assert (root / "scratch/helper.txt").read_text() == "hi\n"
    assert ok(
        run_shell(ws, "agent", "echo hi > notes.txt && echo ok > ../scratch/s.txt && cat notes.txt")
    )  # Basic's bash


def test_hidden_folders_stay_hidden(ws: Workspace):
    for role in ("agent", "implementation"):
        assert not ok(run_shell(ws, role, f"cat {ws.task.repository}/heldout/seed.json"))
        assert not ok(run_shell(ws, role, f"ls {ws.paths.pristine}"))


def test_no_network_even_to_a_loopback_server(ws: Workspace):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[object] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
    thread.start()
    try:
        probe = (
            f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); "
            "print('connected')\""
        )
        for role in ("agent", "implementation", "helper"):
            assert ok(
                run_shell(ws, role, "python -c 'import socket; print(socket.gethostname())'")
            )  # python itself runs
            out = run_shell(ws, role, probe)
            assert not ok(out) and "connected" not in out.split("\n", 1)[1], out
        assert not accepted
        socket.create_connection(("127.0.0.1", port), timeout=3).close()  # the server itself was reachable
        thread.join(5)
        assert accepted
    finally:
        server.close()


def test_every_call_is_an_event(ws: Workspace):
    run_shell(ws, "implementation", "exit 7")
    events = [e for e in read_events(ws.paths.root) if e["kind"] == "shell.run"]
    last = events[-1]
    assert (
        last["role"] == "implementation"
        and last["payload"]["command"] == "exit 7"
        and last["payload"]["exit_code"] == 7
    )
    assert last["payload"]["duration_s"] >= 0 and not last["payload"]["timed_out"]


def test_a_paper_tasks_rubric_is_invisible(tmp_path: Path):
    paper = ROOT / "bench/papers/knn-scaling"
    ws = Workspace.create(load_task(paper / "task.yaml"), tmp_path / "ws", sandbox="bwrap")
    assert "No such file" in run_shell(ws, "agent", f"cat {paper}/rubric.json")


def test_files_bash_changed_are_in_the_implementation_log(tmp_path: Path):
    run_dir = tmp_path / "run"
    solve(
        load_task(TASK),
        run_dir,
        RunConfig(sandbox="bwrap"),
        model=f"scripted:{ROOT / 'tests/fixtures/orchestrator/bash_edit.yaml'}",
        steps=1,
    )
    assert "# tuned by bash" in (run_dir / "submission" / "config.py").read_text()
    assert "files changed: submission/config.py" in (run_dir / "logs" / "impl_log.md").read_text()
    [shell] = [e["payload"] for e in read_events(run_dir) if e["kind"] == "shell.run"]
    assert shell["changed"] == ["submission/config.py"]
