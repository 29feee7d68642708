"""A grid worker does not outlive the grid process: a killed bench once left a worker
calling the model and writing into a run folder that was later reused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GRID = """
import os, sys, time
from bench.grid.executors import open_executor

def record_and_wait(path):
    open(path, "w").write(str(os.getpid()))
    time.sleep(600)

if __name__ == "__main__":
    pool = open_executor("pool", None, [[0]])
    pool.submit(record_and_wait, sys.argv[1])
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def test_a_worker_ends_when_the_grid_process_is_killed(tmp_path: Path) -> None:
    script, marker = tmp_path / "grid.py", tmp_path / "worker.pid"
    script.write_text(GRID)
    grid = subprocess.Popen(
        [sys.executable, str(script), str(marker)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        worker = int(marker.read_text())
        assert alive(worker)
        grid.send_signal(signal.SIGKILL)
        grid.wait()
        deadline = time.monotonic() + 10
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(worker), "the worker outlived the grid process"
    finally:
        grid.kill()


INTERRUPTED_GRID = """
import os, signal, sys, time
from bench.grid.executors import open_executor
from bench.grid.runner import _drain

signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal (a shell's '&' job ignores SIGINT)

def cell(path):
    open(path, "w").write(str(os.getpid()))
    try:
        time.sleep(600)
    except KeyboardInterrupt:
        open(path + ".interrupted", "w").write("left resumable")
        raise

if __name__ == "__main__":
    _drain(lambda: open_executor("pool", None, [[0]]), [("cell", cell, (sys.argv[1],))], 1, lambda: None)
"""


def test_an_interrupted_grid_interrupts_its_running_cells(tmp_path: Path) -> None:
    """A SIGINT to the grid process alone (not to its process group) once left the grid waiting
    for the running cell to end: the pool's exit waits for running work."""
    script, marker = tmp_path / "grid.py", tmp_path / "worker.pid"
    script.write_text(INTERRUPTED_GRID)
    grid = subprocess.Popen(
        [sys.executable, str(script), str(marker)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        worker = int(marker.read_text())
        grid.send_signal(signal.SIGINT)
        _, err = grid.communicate(timeout=60)
        assert "KeyboardInterrupt" in err and grid.returncode != 0
        assert (tmp_path / "worker.pid.interrupted").read_text() == "left resumable"
        deadline = time.monotonic() + 10
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(worker)
    finally:
        grid.kill()
