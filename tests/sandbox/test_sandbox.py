"""The sandbox backends, with real processes and real bwrap namespaces."""

from __future__ import annotations

import http.server
import os
import random
import threading
import time
from pathlib import Path

import pytest

from aiscientist.sandbox import BwrapSandbox, LocalSandbox, allowed_env, bwrap_works, get_sandbox

needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable on this machine")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[1][0] != "Z"


@pytest.mark.parametrize("backend", ["local", pytest.param("bwrap", marks=needs_bwrap)])
def test_timeout_kills_grandchildren(tmp_path: Path, backend: str) -> None:
    # A subshell forks a sleeping grandchild; a unique duration marks our processes.
    duration = f"{300 + os.getpid() % 1000}.{random.randrange(10**6)}"
    command = f"(sleep {duration} & wait) ; sleep {duration}"
    result = get_sandbox(backend).run([command], cwd=tmp_path, timeout=1.0, writable=[tmp_path])
    assert result.timed_out and not result.ok
    assert result.duration_s < 10
    time.sleep(0.3)
    leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p) == f"sleep\x00{duration}\x00"]
    assert [p for p in leftovers if _alive(int(p.name))] == []
    assert "timed out" in (result.failure() or "")


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_text()
    except OSError:
        return ""


def test_command_list_stops_at_first_failure(tmp_path: Path) -> None:
    result = LocalSandbox().run(["true", "echo boom >&2; exit 3", "touch never"], cwd=tmp_path, timeout=10)
    assert result.returncodes == [0, 3]
    assert not (tmp_path / "never").exists()
    assert result.failure() == "command exited 3: echo boom >&2; exit 3 (boom)"


def test_only_locale_and_time_zone_come_from_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("HARMLESS", "yes")
    monkeypatch.setenv("LC_TIME", "C.UTF-8")
    monkeypatch.setenv("TZ", "UTC")
    env = allowed_env({"OURS": "1"})
    assert env["OURS"] == "1" and env["LC_TIME"] == "C.UTF-8" and env["TZ"] == "UTC"
    assert "OPENAI_API_KEY" not in env and "HARMLESS" not in env
    result = LocalSandbox().run(["env"], cwd=tmp_path, timeout=10)
    assert "sk-secret" not in result.stdout_tail and "HARMLESS" not in result.stdout_tail
    assert "TZ=UTC" in result.stdout_tail


def test_output_tails_are_capped(tmp_path: Path) -> None:
    result = LocalSandbox().run(["python3 -c \"print('x' * 100000)\""], cwd=tmp_path, timeout=10)
    assert result.ok and 0 < len(result.stdout_tail) <= 8000


@needs_bwrap
def test_bwrap_blocks_network(tmp_path: Path) -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    probe = f"python3 -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=3)\""
    try:
        assert LocalSandbox().run([probe], cwd=tmp_path, timeout=20).ok  # reachable outside
        result = BwrapSandbox().run([probe], cwd=tmp_path, timeout=20, writable=[tmp_path])
        assert result.returncodes == [1] and "Connection refused" in result.stderr_tail
    finally:
        server.shutdown()


@needs_bwrap
def test_bwrap_writes_only_to_writable_folders(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    sandbox = BwrapSandbox()
    assert sandbox.run(["echo ok > inside.txt"], cwd=work, timeout=10, writable=[work]).ok
    assert (work / "inside.txt").read_text() == "ok\n"
    denied = sandbox.run([f"echo no > {outside}/x.txt"], cwd=work, timeout=10, writable=[work])
    assert denied.returncodes == [1] and "No such file or directory" in denied.stderr_tail  # not even visible
    assert not (outside / "x.txt").exists()
    assert not sandbox.run(["echo no > /etc/aisci-probe"], cwd=work, timeout=10, writable=[work]).ok
    # temporary files go to a private writable folder that is gone afterwards
    private = sandbox.run(
        ['python3 -c "import tempfile; print(tempfile.mkstemp()[1])"'], cwd=work, timeout=10, writable=[work]
    )
    assert private.ok and not Path(private.stdout_tail.strip()).exists()


@needs_bwrap
def test_bwrap_protected_file_cannot_change(tmp_path: Path) -> None:
    protected = tmp_path / "eval.py"
    protected.write_text("original\n")
    sandbox = BwrapSandbox()
    for attack in ["echo hacked > eval.py", "rm -f eval.py", "mv eval.py moved.py", "chmod 777 eval.py"]:
        result = sandbox.run([attack], cwd=tmp_path, timeout=10, writable=[tmp_path], readonly=[protected])
        assert not result.ok, attack
    assert protected.read_text() == "original\n"


@needs_bwrap
def test_bwrap_hides_paths(tmp_path: Path) -> None:
    secret = tmp_path / "task_repo"
    secret.mkdir()
    (secret / "test_split.txt").write_text("labels")
    work = tmp_path / "work"
    work.mkdir()
    result = BwrapSandbox().run(
        [f"cat {secret}/test_split.txt"], cwd=work, timeout=10, writable=[work], hidden=[secret]
    )
    assert not result.ok and "No such file" in result.stderr_tail


def test_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(Exception, match="unknown sandbox backend 'vm'"):
        get_sandbox("vm")
