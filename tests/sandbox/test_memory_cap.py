"""A step that allocates four times `sandbox.memory_mb` is stopped with the cause "memory limit",
whichever way it holds the memory: in its processes, in a tmpfs (`/tmp`) or in shared memory
(`/dev/shm`, anonymous shared pages); `/dev` itself takes no file (docker: at most its 64 MB, counted).
Real sandboxes, real kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiscientist.records.causes import FailureCause
from aiscientist.sandbox import SandboxSettings, get_sandbox
from aiscientist.sandbox.cgroup import RLIMIT, memory_enforcement
from tests.sandbox_backends import BACKENDS

CAP_MB = 128
WAYS = {
    "processes": "python3 -c 'x = bytearray({n} << 20); print(len(x))'",
    "tmpfs": "head -c {n}M /dev/zero > /tmp/fill && echo filled",
    "shm file": "head -c {n}M /dev/zero > /dev/shm/fill && echo filled",
    "shared pages": "python3 -c 'import mmap; m = mmap.mmap(-1, {n} << 20, flags=mmap.MAP_SHARED); "
    "m.write(bytes({n} << 20)); print(len(m))'",
}
ISOLATED = [b for b in BACKENDS if not isinstance(b, str)]  # bwrap, docker (local has the host's /dev)
BWRAP, DOCKER = ISOLATED
needs_cgroup = pytest.mark.skipif(memory_enforcement() == RLIMIT, reason="no writable memory cgroup here")


@needs_cgroup
@pytest.mark.parametrize("backend", ISOLATED)
@pytest.mark.parametrize("way", list(WAYS))
def test_four_times_the_cap_is_stopped_with_the_memory_cause(tmp_path: Path, backend: str, way: str) -> None:
    box = get_sandbox(SandboxSettings(backend=backend, memory_mb=CAP_MB))
    result = box.run([WAYS[way].format(n=4 * CAP_MB)], cwd=tmp_path, timeout=120, writable=[tmp_path])
    assert not result.ok and "filled" not in result.stdout_tail and str(4 * CAP_MB << 20) not in result.stdout_tail
    assert result.failure_cause() is FailureCause.MEMORY, (result.returncodes, result.memory, result.stderr_tail)
    assert "stopped at the memory limit (sandbox.memory_mb = 128" in (result.failure() or "")
    assert result.memory is not None and result.memory.oom_kills >= 1
    if result.memory.peak_mb is not None:
        assert result.memory.peak_mb <= CAP_MB + 1


@needs_cgroup
@pytest.mark.parametrize("backend", ISOLATED)
def test_within_the_cap_a_step_runs_and_its_peak_is_measured(tmp_path: Path, backend: str) -> None:
    box = get_sandbox(SandboxSettings(backend=backend, memory_mb=CAP_MB))
    half = CAP_MB // 2
    result = box.run(
        [WAYS["processes"].format(n=half // 2), WAYS["tmpfs"].format(n=half // 2)],
        cwd=tmp_path,
        timeout=120,
        writable=[tmp_path],
    )
    assert result.ok and result.failure_cause() is None, result.stderr_tail
    assert result.memory is not None and result.memory.oom_kills == 0 and result.memory.limit_mb == CAP_MB
    if backend == "bwrap":
        assert result.memory.enforced_by == memory_enforcement()
        assert result.memory.peak_mb is not None and half // 2 <= result.memory.peak_mb <= CAP_MB


@pytest.mark.parametrize("backend", [BWRAP])
def test_dev_takes_no_file_but_its_devices_work(tmp_path: Path, backend: str) -> None:
    box = get_sandbox(SandboxSettings(backend=backend, memory_mb=CAP_MB))
    result = box.run(
        ["echo x > /dev/null && head -c 4 /dev/urandom > /dev/null && echo devices; echo x > /dev/planted"],
        cwd=tmp_path,
        timeout=60,
        writable=[tmp_path],
    )
    assert "devices" in result.stdout_tail and not result.ok
    assert "Read-only file system" in result.stderr_tail or "Permission denied" in result.stderr_tail


@pytest.mark.parametrize("backend", [DOCKER])
def test_docker_dev_holds_no_more_than_its_small_cap(tmp_path: Path, backend: str) -> None:
    """Docker's own /dev is a 64 MB tmpfs the command may write (no engine option makes it read-only);
    what it holds counts against the container's memory cgroup, so it is a small cap, never a way around one."""
    box = get_sandbox(SandboxSettings(backend=backend, memory_mb=CAP_MB))
    result = box.run(["head -c 512M /dev/zero > /dev/fill; echo rc=$?"], cwd=tmp_path, timeout=60, writable=[tmp_path])
    assert "No space left on device" in result.stderr_tail or (result.memory and result.memory.oom_kills >= 1)


@needs_cgroup
def test_the_local_backend_counts_its_processes_too(tmp_path: Path) -> None:
    result = get_sandbox(SandboxSettings(backend="local", memory_mb=CAP_MB)).run(
        [WAYS["processes"].format(n=4 * CAP_MB)], cwd=tmp_path, timeout=120
    )
    assert result.failure_cause() is FailureCause.MEMORY and result.memory is not None
    assert result.memory.enforced_by == memory_enforcement() != RLIMIT
