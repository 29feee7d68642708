"""One contract, three backends: the same checks run on local, bubblewrap and docker
with real processes, real namespaces and a real Docker engine. The local backend is
not a security boundary; the isolation checks it cannot meet are skipped for it."""

from __future__ import annotations

import http.server
import os
import random
import threading
import time
from pathlib import Path

import pytest

from aiscientist.sandbox import get_sandbox
from aiscientist.sandbox.base import TAIL_CHARS
from tests.sandbox_backends import BACKENDS

NOT_A_BOUNDARY = "the local backend is not a security boundary (plain processes)"


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def isolating(backend: str) -> str:
    if backend == "local":
        pytest.skip(NOT_A_BOUNDARY)
    return backend


def _unique_sleep() -> str:
    """A sleep duration no other process on the machine uses, so leftovers are ours."""
    return f"{300 + os.getpid() % 1000}.{random.randrange(10**6)}"


def _running(duration: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_text() == f"sleep\x00{duration}\x00":
                if (proc / "stat").read_text().split(") ")[1][0] != "Z":
                    found.append(int(proc.name))
        except OSError:
            continue
    return found


def _gone(duration: str, wait_s: float = 3.0) -> bool:
    deadline = time.monotonic() + wait_s
    while _running(duration) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _running(duration)


def test_output_is_captured_and_clipped_alike(tmp_path: Path, backend: str) -> None:
    script = "import sys; print('x' * 100000); print('warn-' * 3000, file=sys.stderr)"
    result = get_sandbox(backend).run(
        [f'python3 -c "{script}"', "echo second"], cwd=tmp_path, timeout=30, writable=[tmp_path]
    )
    assert result.ok and result.backend == backend and result.returncodes == [0, 0]
    assert result.stdout_tail == ("x" * 100000 + "\nsecond\n")[-TAIL_CHARS:]
    assert result.stderr_tail == ("warn-" * 3000 + "\n")[-TAIL_CHARS:]


def test_command_list_stops_at_first_failure(tmp_path: Path, backend: str) -> None:
    result = get_sandbox(backend).run(
        ["true", "echo boom >&2; exit 3", "touch never"], cwd=tmp_path, timeout=30, writable=[tmp_path]
    )
    assert result.returncodes == [0, 3]
    assert not (tmp_path / "never").exists()
    assert result.failure() == "command exited 3: echo boom >&2; exit 3 (boom)"


def test_writes_land_in_writable_folders(tmp_path: Path, backend: str) -> None:
    result = get_sandbox(backend).run(
        ["mkdir -p out && echo ok > out/inside.txt", "cat out/inside.txt"],
        cwd=tmp_path,
        timeout=30,
        writable=[tmp_path],
    )
    assert result.ok and result.stdout_tail == "ok\n"
    assert (tmp_path / "out" / "inside.txt").read_text() == "ok\n"


def test_writes_outside_allowed_areas_are_blocked(tmp_path: Path, isolating: str) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    sandbox = get_sandbox(isolating)
    for target in [outside / "x.txt", Path("/etc/aisci-probe"), Path("/usr/aisci-probe"), Path.home() / "aisci-probe"]:
        result = sandbox.run([f"echo no > {target}"], cwd=work, timeout=30, writable=[work])
        assert result.returncodes == [1], target
        assert not target.exists(), target


def test_temporary_files_are_private_to_the_call(tmp_path: Path, isolating: str) -> None:
    result = get_sandbox(isolating).run(
        ['python3 -c "import tempfile; print(tempfile.mkstemp()[1])"'], cwd=tmp_path, timeout=30, writable=[tmp_path]
    )
    assert result.ok
    assert not Path(result.stdout_tail.strip()).exists()


def test_network_is_blocked(tmp_path: Path, isolating: str) -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    probe = (
        'python3 -c "import urllib.request; '
        f"urllib.request.urlopen('http://127.0.0.1:{server.server_address[1]}/', timeout=3)\""
    )
    try:
        assert get_sandbox("local").run([probe], cwd=tmp_path, timeout=30).ok  # reachable from the host
        result = get_sandbox(isolating).run([probe], cwd=tmp_path, timeout=30, writable=[tmp_path])
        assert result.returncodes == [1] and "Connection refused" in result.stderr_tail
    finally:
        server.shutdown()


def test_protected_files_stay_read_only(tmp_path: Path, isolating: str) -> None:
    protected = tmp_path / "eval.py"
    protected.write_text("original\n")
    sandbox = get_sandbox(isolating)
    for attack in [
        "echo hacked > eval.py",
        "rm -f eval.py",
        "mv eval.py moved.py",
        "chmod 777 eval.py",
        "truncate -s 0 eval.py",
    ]:
        result = sandbox.run([attack], cwd=tmp_path, timeout=30, writable=[tmp_path], readonly=[protected])
        assert not result.ok, attack
    assert protected.read_text() == "original\n"
    assert (
        sandbox.run(["cat eval.py"], cwd=tmp_path, timeout=30, writable=[tmp_path], readonly=[protected]).stdout_tail
        == "original\n"
    )


@pytest.mark.parametrize("inside_writable", [False, True])
def test_hidden_paths_cannot_be_read(tmp_path: Path, isolating: str, inside_writable: bool) -> None:
    work = tmp_path / "work"
    secret = (work if inside_writable else tmp_path) / "task_repo"
    secret.mkdir(parents=True)
    work.mkdir(exist_ok=True)
    (secret / "test_split.txt").write_text("labels")
    result = get_sandbox(isolating).run(
        [f"cat {secret}/test_split.txt"], cwd=work, timeout=30, writable=[work], hidden=[secret]
    )
    assert not result.ok and "No such file" in result.stderr_tail


def test_timeout_kills_the_whole_process_tree(tmp_path: Path, backend: str) -> None:
    duration = _unique_sleep()
    command = f"(sleep {duration} & wait) ; sleep {duration}"
    result = get_sandbox(backend).run([command, "touch never"], cwd=tmp_path, timeout=2.0, writable=[tmp_path])
    assert result.timed_out and not result.ok and result.returncodes[0] != 0
    assert result.duration_s < 20
    assert "timed out" in (result.failure() or "") and "[sandbox] timed out after 2s" in result.stderr_tail
    assert not (tmp_path / "never").exists()
    assert _gone(duration)


def test_background_processes_do_not_outlive_the_call(tmp_path: Path, backend: str) -> None:
    duration = _unique_sleep()
    result = get_sandbox(backend).run(
        [f"sleep {duration} > /dev/null 2>&1 & echo started"], cwd=tmp_path, timeout=30, writable=[tmp_path]
    )
    assert result.ok and result.stdout_tail == "started\n"
    assert _gone(duration)


def test_detached_processes_do_not_outlive_the_call(tmp_path: Path, isolating: str) -> None:
    # setsid leaves the process group: only a namespace or container boundary catches it
    duration = _unique_sleep()
    result = get_sandbox(isolating).run(
        [f"setsid nohup sleep {duration} > /dev/null 2>&1 < /dev/null & echo started"],
        cwd=tmp_path,
        timeout=30,
        writable=[tmp_path],
    )
    assert result.ok
    assert _gone(duration)
