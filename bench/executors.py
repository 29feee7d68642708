"""Where grid cells run: the local process pool (bench.runner, the default) or Ray.

`RayExecutor` looks like a `concurrent.futures` executor (`submit` returns a Future;
a context manager), so the grid loop, its progress table and its failure records are
the same whichever runs the cells. Each cell is one Ray task asking for its share of
CPUs; it runs in the driver's working directory, so the run folders are the same
paths (on a multi-node cluster OUT and the tasks must be on a filesystem every node
mounts, and each node needs this package installed).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

EXECUTORS = ("pool", "ray")
CORES_VAR = "AISCIENTIST_RUN_CORES"  # the run's core share, read by bench.runner for thread counts


class ExecutorUnavailable(RuntimeError):
    pass


class RayExecutor:
    """Grid cells as Ray tasks: a local cluster of `num_cpus` (the machine by default),
    or the existing cluster at `address` (`ray://host:10001`, `host:6379` or `auto`)."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None, cores_per_run: int = 1):
        try:
            import ray
        except ImportError as err:
            raise ExecutorUnavailable("--executor ray needs Ray: pip install 'aiscientist[scale]' (or pip install ray)") from err
        self.ray, self.cores, self.refs = ray, cores_per_run, []
        self.started = not ray.is_initialized()
        if self.started:
            options: dict[str, Any] = {"address": address} if address else {"num_cpus": num_cpus or len(os.sched_getaffinity(0)), "include_dashboard": False}
            env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
            try:
                ray.init(**options, runtime_env={"env_vars": env}, log_to_driver=False, configure_logging=False)
            except (ConnectionError, ValueError, RuntimeError) as err:
                raise ExecutorUnavailable(f"cannot start or reach a Ray cluster{f' at {address}' if address else ''}: {err}") from err
        self.remote = ray.remote(num_cpus=cores_per_run, max_retries=0)(_run_cell)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        ref = self.remote.remote(fn, args, os.getcwd(), self.cores)
        self.refs.append(ref)
        return ref.future()

    def __enter__(self) -> RayExecutor:
        return self

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
    """One cell inside a Ray worker: the driver's working directory and thread counts for its CPU share."""
    os.chdir(cwd)
    os.environ[CORES_VAR] = str(cores)
    return fn(*args)
