"""What only the docker backend does, against a real local engine: limits from the
settings, nothing of the host visible, labels, clean-up on Ctrl-C and of orphans, the
run image, clear errors."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from aiscientist.sandbox import SandboxSettings, SandboxUnavailable, get_sandbox
from aiscientist.sandbox.docker import LABEL, docker_problem, labelled

_PROBLEM = docker_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=f"no Docker engine: {_PROBLEM}")
ROOT = Path(__file__).resolve().parents[2]


def docker(**limits):
    return get_sandbox(SandboxSettings(backend="docker", **limits))


def _ours(client) -> list:
    return labelled(client, f"{LABEL}.pid={os.getpid()}")


def test_memory_processes_and_file_size_are_limited(tmp_path: Path) -> None:
    box = docker(memory_mb=128, processes=32, file_size_mb=1)
    memory = box.run(
        ["python3 -c \"b = bytearray(512 * 1024 * 1024); print('allocated')\""],
        cwd=tmp_path,
        timeout=60,
        writable=[tmp_path],
    )
    assert memory.returncodes == [137] and "allocated" not in memory.stdout_tail  # killed by the OOM killer
    forks = box.run(["for i in $(seq 64); do sleep 5 & done; wait"], cwd=tmp_path, timeout=60, writable=[tmp_path])
    assert "Resource temporarily unavailable" in forks.stderr_tail
    big = box.run(["head -c 3000000 /dev/zero > big.bin"], cwd=tmp_path, timeout=60, writable=[tmp_path])
    assert big.returncodes == [128 + signal.SIGXFSZ] and "File size limit exceeded" in big.stderr_tail
    assert (tmp_path / "big.bin").stat().st_size == 1024 * 1024
    small = docker().run(["head -c 3000000 /dev/zero > big.bin"], cwd=tmp_path, timeout=60, writable=[tmp_path])
    assert small.ok and (tmp_path / "big.bin").stat().st_size == 3000000


def test_cpu_quota_reaches_the_container(tmp_path: Path) -> None:
    result = docker(cpus=0.5).run(
        ["cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us"],
        cwd=tmp_path,
        timeout=60,
        writable=[tmp_path],
    )
    assert result.ok and result.stdout_tail.split()[0] == "50000"


def test_only_the_runtime_python_and_run_areas_are_visible(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "sibling.txt").write_text("host file")
    probes = [
        f"cat {tmp_path}/sibling.txt",
        "grep -q root /etc/shadow",
        "ls /etc/ssh/*",
        f"ls {ROOT}",
        "ls /home/*",
        "ls /run/*",
        f"ls {Path.home()}/.cache",
        f"ls {os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')[7:]}",
    ]
    box = docker()
    for probe in probes:
        assert not box.run([probe], cwd=work, timeout=60, writable=[work]).ok, probe
    python = box.run(
        ['python -c "import sys, numpy; print(sys.executable)"', "touch /usr/x 2>/dev/null || echo ro"],
        cwd=work,
        timeout=60,
        writable=[work],
    )
    assert python.ok and python.stdout_tail.splitlines() == [sys.executable, "ro"]


def test_files_keep_the_callers_owner_and_env_is_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    result = docker().run(["touch made.txt; env"], cwd=tmp_path, timeout=60, env={"EXTRA": "1"}, writable=[tmp_path])
    assert (
        result.ok
        and "sk-secret" not in result.stdout_tail
        and "EXTRA=1" in result.stdout_tail
        and "HOME=/tmp" in result.stdout_tail
    )
    assert (tmp_path / "made.txt").stat().st_uid == os.getuid()


def test_containers_are_labelled_and_removed_after_each_call(tmp_path: Path) -> None:
    box = docker()
    seen: list[dict] = []
    watcher = threading.Thread(target=lambda: seen.extend(c.labels for c in _poll(box.client)))
    watcher.start()
    assert box.run(["sleep 2"], cwd=tmp_path, timeout=60, writable=[tmp_path]).ok
    watcher.join()
    assert seen and seen[0][f"{LABEL}.cwd"] == str(tmp_path) and seen[0][f"{LABEL}.pid"] == str(os.getpid())
    assert _ours(box.client) == []


def _poll(client) -> list:
    """Our containers, as soon as one exists (up to 60 s: a loaded engine starts slowly)."""
    for _ in range(1200):
        found = _ours(client)
        if found:
            return found
        threading.Event().wait(0.05)
    return []


def test_ctrl_c_removes_the_running_container(tmp_path: Path) -> None:
    box = docker()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # an earlier test may have replaced it
    interrupter = threading.Thread(target=lambda: _poll(box.client) and os.kill(os.getpid(), signal.SIGINT))
    interrupter.start()
    with pytest.raises(KeyboardInterrupt):
        box.run(["sleep 60"], cwd=tmp_path, timeout=120, writable=[tmp_path])
    interrupter.join()
    signal.signal(signal.SIGINT, previous)
    assert _ours(box.client) == []


def test_orphans_of_a_dead_owner_are_removed_on_next_start(tmp_path: Path) -> None:
    # a sandbox run killed with SIGKILL leaves its container behind
    script = (
        "from aiscientist.sandbox import get_sandbox; get_sandbox('docker').run(['sleep 300'], "
        f"cwd='{tmp_path}', timeout=600)"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    client = docker().client
    label = f"{LABEL}.pid={owner.pid}"
    for _ in range(200):
        if labelled(client, label, running_only=True):
            break
        threading.Event().wait(0.05)
    owner.kill()
    owner.wait()
    assert len(labelled(client, label)) == 1
    docker()  # the next start cleans up
    assert labelled(client, label) == []


def test_missing_engine_or_image_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="docker image 'no-such-image:1' is not on the engine"):
        docker(image="no-such-image:1")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    with pytest.raises(SandboxUnavailable, match=f"no Docker engine answers at unix://{tmp_path}/none.sock"):
        docker()


def test_build_image_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "sandbox", "build-image", "--tag", "aisci-test-build:1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "built aisci-test-build:1" in done.stderr
    result = docker(image="aisci-test-build:1").run(
        ["echo from-new-image"], cwd=tmp_path, timeout=60, writable=[tmp_path]
    )
    assert result.ok and result.stdout_tail == "from-new-image\n"
    docker().client.images.remove("aisci-test-build:1")


@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no GPU on this machine")
def test_gpus_pass_through(tmp_path: Path) -> None:
    result = docker(gpus="all").run(["nvidia-smi -L"], cwd=tmp_path, timeout=60, writable=[tmp_path])
    assert result.ok and "GPU" in result.stdout_tail


def test_paper_reproduction_runs_in_a_fresh_container(tmp_path: Path) -> None:
    from bench.paper.reproduce import reproduce

    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "reproduce.sh").write_text(
        f"set -e\necho start\ntest ! -e {sub}/reproduce.sh\nmkdir results\necho 0.9 > results/acc.txt\necho "
        "done\nexit 3\n"
    )
    result = reproduce(sub, tmp_path / "work", timeout_s=60, sandbox=docker())
    assert result.ran and result.backend == "docker" and result.returncode == 3  # the script's own exit code
    assert result.log_path.read_text() == "start\ndone\n" and result.created == ["results/acc.txt"]
    assert sorted(p.name for p in sub.iterdir()) == ["reproduce.sh"]  # the original submission is never touched


def test_an_engine_error_fails_the_command_not_the_caller(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    result = docker().run(["echo never"], cwd=tmp_path, timeout=60, writable=[tmp_path, missing])
    assert result.returncodes == [125] and not result.ok
    assert "docker engine error" in result.stderr_tail and str(missing) in result.stderr_tail


def test_an_image_from_a_root_filesystem_brings_its_own_runtime(tmp_path: Path) -> None:
    # a minimal root filesystem: bash and the libraries it links, nothing of the host mounted
    rootfs = tmp_path / "rootfs"
    bash = Path(shutil.which("bash")).resolve()
    libs = [
        Path(p)
        for p in subprocess.run(["ldd", str(bash)], capture_output=True, text=True).stdout.split()
        if p.startswith("/")
    ]
    for path in [bash, *libs]:
        target = rootfs / Path(os.path.realpath(path)).relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        if Path(path).resolve() != Path(path):
            link = rootfs / path.relative_to("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.realpath(path))
    for link in ("bin", "lib", "lib64"):
        if os.path.islink(f"/{link}") and not (rootfs / link).exists():
            (rootfs / link).symlink_to(os.readlink(f"/{link}"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "aiscientist",
            "sandbox",
            "build-image",
            "--tag",
            "aisci-test-rootfs:1",
            "--rootfs",
            str(rootfs),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    work = tmp_path / "work"
    work.mkdir()
    box = docker(image="aisci-test-rootfs:1")
    assert not box.host_runtime
    result = box.run(["echo $BASH_VERSION > out.txt; echo ok", "ls /root"], cwd=work, timeout=60, writable=[work])
    assert result.returncodes == [0, 127]  # bash is there, ls is not: the host's /usr is not mounted
    assert (work / "out.txt").read_text().strip() and result.stdout_tail == "ok\n"
    box.client.images.remove("aisci-test-rootfs:1")


@pytest.mark.slow
def test_solve_runs_every_step_in_docker_and_leaves_no_container(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "aiscientist",
        "solve",
        "tests/fixtures/tiny/task.yaml",
        "--model",
        "offline",
        "--steps",
        "2",
        "--sandbox",
        "docker",
        "--run-dir",
        str(run_dir),
    ]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    steps = [json.loads(p.read_text()) for p in sorted(run_dir.glob("experiments/step_*/step.json"))]
    assert len(steps) == 2 and {s["backend"] for s in steps} == {"docker"}
    containers = labelled(docker().client, f"{LABEL}.cwd")
    assert [c for c in containers if c.labels[f"{LABEL}.cwd"].startswith(str(run_dir))] == []
