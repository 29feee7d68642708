"""Where the grid's runs execute, by name (`EXECUTORS`): a local process pool (the default) or Ray.

Pool workers are pinned to their own share of cores (inherited by the experiment processes).
`RayExecutor` has the pool's `concurrent.futures` shape, so the grid loop is the same; each run
is a Ray task asking for its share of CPUs, in the driver's working directory (on a multi-node
cluster OUT and the tasks must be on a filesystem every node mounts).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, wait
from typing import Any

from aiscientist.util.registry import Registry

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "TORCH_NUM_THREADS")
CORES_VAR = "AISCIENTIST_RUN_CORES"  # a Ray task's CPU share (it is not pinned to cores)
INTERRUPT_GRACE_S = 30.0  # an interrupted cell's time to leave its run resumable before its worker is killed


class ExecutorUnavailable(RuntimeError):
    pass


def thread_env() -> dict[str, str]:
    """Thread counts for numeric libraries: the cores this run may use."""
    n = os.environ.get(CORES_VAR) or str(len(os.sched_getaffinity(0)))
    return {var: n for var in THREAD_VARS}


def follow_parent(parent: int, every_s: float = 1.0) -> None:
    """End this worker (SIGTERM) once the grid process that made it is gone: a killed bench
    left a worker calling the model and writing into a run folder that was then reused."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="follow-parent", daemon=True).start()


def pin_worker(slots) -> None:
    """Pool initializer: take one core set and pin this worker (and its children) to it; the
    worker ends with the grid process."""
    follow_parent(os.getppid())
    cores = slots.get()
    os.sched_setaffinity(0, cores)
    os.environ.update(thread_env())  # read by torch when a cell first imports it (the embedder: bench.scoring.embed)


def pool_shape(n_runs: int, workers: int | None, cores_per_run: int | None) -> tuple[int, list[list[int]]]:
    """Number of workers and the core set of each (disjoint when they fit)."""
    cpus = sorted(os.sched_getaffinity(0))
    if cores_per_run is None:
        want = workers or min(n_runs, len(cpus))
        cores_per_run = max(1, len(cpus) // max(1, want))
    workers = workers or max(1, min(n_runs, len(cpus) // cores_per_run))
    width = min(cores_per_run, len(cpus))
    return workers, [[cpus[(i * cores_per_run + j) % len(cpus)] for j in range(width)] for i in range(workers)]


def open_executor(kind: str, address: str | None, slots: list[list[int]]):
    """The executor named `kind`, shaped by `pool_shape`: one run at once per core set in
    `slots`, each with that many cores."""
    return EXECUTORS.get(kind)(address, slots)


class CellPool(ProcessPoolExecutor):
    """The local pool, whose running cells stop with the grid (leaving on exit, the stdlib pool
    waits for every running cell: a SIGINT to the grid process alone did not stop a peer's cell)."""

    def interrupt(self, running: list[Future]) -> None:
        """Ctrl-C: a terminal's reaches the workers too; else they get a SIGINT of their own and
        leave their runs resumable; a worker still in its cell after INTERRUPT_GRACE_S is killed."""
        workers = list((self._processes or {}).values())
        for signum, grace_s in ((None, 10.0), (signal.SIGINT, INTERRUPT_GRACE_S), (signal.SIGKILL, 0.0)):
            if signum is not None:
                for worker in workers:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(worker.pid, signum)
            running = list(wait(running, timeout=grace_s).not_done)
            if not running:
                return


def _pool(address: str | None, slots: list[list[int]]) -> CellPool:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    for slot in slots:
        queue.put(slot)
    return CellPool(max_workers=len(slots), mp_context=context, initializer=pin_worker, initargs=(queue,))


def _ray(address: str | None, slots: list[list[int]]) -> RayExecutor:
    return RayExecutor(address, num_cpus=len(slots) * len(slots[0]), cores_per_run=len(slots[0]))


class RayExecutor:
    """Runs as Ray tasks: a local cluster of `num_cpus` (the machine by default), or
    the existing cluster at `address` (`ray://host:10001`, `host:6379` or `auto`)."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None, cores_per_run: int = 1):
        try:
            import ray
        except ImportError as err:
            raise ExecutorUnavailable(
                "--executor ray needs Ray: pip install 'aiscientist[scale]' (or pip install ray)"
            ) from err
        self.ray, self.cores, self.refs = ray, cores_per_run, []
        self.started = not ray.is_initialized()
        if self.started:
            options: dict[str, Any] = (
                {"address": address}
                if address
                else {"num_cpus": num_cpus or len(os.sched_getaffinity(0)), "include_dashboard": False}
            )
            env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
            try:
                ray.init(**options, runtime_env={"env_vars": env}, log_to_driver=False, configure_logging=False)
            except (ConnectionError, ValueError, RuntimeError) as err:
                raise ExecutorUnavailable(
                    f"cannot start or reach a Ray cluster{f' at {address}' if address else ''}: {err}"
                ) from err
        self.remote = ray.remote(num_cpus=cores_per_run, max_retries=0)(_run_cell)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        ref = self.remote.remote(fn, args, os.getcwd(), self.cores)
        self.refs.append(ref)
        return ref.future()

    def __enter__(self) -> RayExecutor:
        return self

    def interrupt(self, running: list[Future]) -> None:
        """Ctrl-C: the exit that follows cancels the running tasks."""

    def __exit__(self, *exc: object) -> None:
        """On an error or Ctrl-C, cancel what is still running; shut down a cluster we started."""
        for ref in self.refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # already finished, or the cluster is gone
                pass
        if self.started:
            self.ray.shutdown()


def _run_cell(fn: Callable[..., Any], args: tuple, cwd: str, cores: int) -> Any:
    """One run inside a Ray worker: the driver's working directory, thread counts for its CPU share."""
    os.chdir(cwd)
    os.environ[CORES_VAR] = str(cores)
    return fn(*args)


# name -> (Ray address or None, core sets) -> an executor with `submit` and the context-manager shape
EXECUTORS: Registry[Callable[[str | None, list[list[int]]], Any]] = Registry("executor", ExecutorUnavailable)
EXECUTORS.register("pool", _pool)
EXECUTORS.register("ray", _ray)
