"""Scale, measured: the grid's parallel efficiency per executor, and what a step costs per sandbox.

1. Parallel efficiency: an experiment-bound grid (the tiny fixture task with a fixed
   CPU burn of about --burn seconds added to each experiment; hpsearch × --rounds rounds
   × --steps steps, offline, sandbox --grid-sandbox) runs with 1 worker and with 2
   workers (one core each), on the process pool and on Ray. Efficiency = wall(1
   worker) / wall(2 workers); the goal on 2 cores is >= 1.8. Each run also runs the hidden
   test on its best step, and the grid measures the task's baseline (validation and hidden
   test) once, as a job of its own, so the grid does rounds × (steps + 1) + 2 experiments.
   The pool pins each worker to its core; Ray tasks are not pinned (Ray schedules CPU
   counts, not cores), so a lone Ray run may use an idle core for its own overhead.
   Ray runs on one local cluster started before both walls, as a running cluster
   would be; its start-up time is printed beside them.
2. Per-step cost of each sandbox backend: the median wall time of `sandbox.run(["true"])`
   (for docker: create, start, wait, logs and remove of one container) and of a whole
   experiment step of the tiny task through the engine (setup restore, two commands,
   metrics, diff, snapshot, record), over --repeat repetitions.

Wall times on a machine shared with other jobs are noisy: run it on an idle machine
for figures to quote.

    python benchmarks/scale.py [--rounds 6] [--steps 6] [--burn 2] [--repeat 5]
                               [--executors pool,ray] [--backends local,bwrap,docker] [--grid-sandbox auto]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiscientist.sandbox import SandboxUnavailable, get_sandbox  # noqa: E402
from bench.grid.runner import GridConfig, run_grid  # noqa: E402

TINY = ROOT / "tests/fixtures/tiny"


def burning_task(folder: Path, burn_s: float) -> Path:
    """The tiny task, each experiment first burning about `burn_s` seconds of one core."""
    shutil.copytree(TINY, folder)
    (folder / "repo" / "burn.py").write_text(f"s = 0\nfor i in range({int(burn_s * 16_000_000)}):\n    s += i\n")
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    spec["name"] = "tiny-burn"
    spec["protected"] = [*spec["protected"], "burn.py"]
    spec["commands"] = ["python burn.py", *spec["commands"]]
    spec["test_commands"] = [f"python burn.py && {c}" for c in spec["test_commands"]]
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder / "task.yaml"


@contextlib.contextmanager
def cluster(executor: str):
    """Ray: one local cluster of 2 CPUs for both walls, started once, as a user's
    running cluster would be (`--address`); the grid keeps its workers' number of runs
    in flight. Yields a note with the start-up time, which is in neither wall."""
    if executor != "ray":
        yield ""
        return
    from bench.grid.executors import RayExecutor

    os.environ.setdefault("PYTHONPATH", str(ROOT))  # Ray's workers import this checkout
    started = time.monotonic()
    with RayExecutor(num_cpus=2):  # the grid's own RayExecutor finds it running and leaves it
        yield f"   (cluster start {time.monotonic() - started:.1f} s, not in the walls)"


def grid_wall(task: Path, executor: str, workers: int, args: argparse.Namespace, scratch: Path) -> float:
    config = GridConfig(
        agents=["hpsearch"],
        tasks=[task],
        rounds=args.rounds,
        steps=args.steps,
        model="offline",
        workers=workers,
        cores_per_run=1,
        executor=executor,
        sandbox=args.grid_sandbox,
    )
    out = scratch / f"{executor}-{workers}"
    started = time.monotonic()
    outcome = run_grid(config, out, progress=False)
    wall = time.monotonic() - started
    if outcome["failed"]:
        raise SystemExit(f"grid failed: {outcome['failed']}")
    return wall


def step_costs(backend: str, repeat: int, scratch: Path) -> tuple[float, float]:
    """Median seconds of one empty sandbox call and of one experiment step."""
    from aiscientist.task import load_task
    from aiscientist.workspace import Workspace

    sandbox = get_sandbox(backend)
    work = scratch / f"call-{backend}"
    work.mkdir()
    calls = []
    for _ in range(repeat):
        started = time.monotonic()
        assert sandbox.run(["true"], cwd=work, timeout=60, writable=[work]).ok
        calls.append(time.monotonic() - started)
    ws = Workspace.create(load_task(TINY / "task.yaml"), scratch / f"ws-{backend}", sandbox=backend)
    ws.engine.ensure_setup()
    steps = []
    for _ in range(repeat):
        started = time.monotonic()
        record = ws.engine.run_step(agent="bench", hypothesis="the unchanged code")
        steps.append(time.monotonic() - started)
        assert record.success, record.error
    return statistics.median(calls), statistics.median(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--burn", type=float, default=2.0, help="approximate CPU seconds each experiment burns")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--executors", default="pool,ray")
    parser.add_argument("--backends", default="local,bwrap,docker")
    parser.add_argument("--grid-sandbox", default="auto", help="sandbox of the grid's experiments")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aisci-scale-") as tmp:
        scratch = Path(tmp)
        task = burning_task(scratch / "burning_task", args.burn)
        print(
            f"grid: hpsearch x {args.rounds} rounds x {args.steps} steps, ~{args.burn:g} CPU-s per experiment, "
            f"sandbox {args.grid_sandbox}"
        )
        print(f"{'executor':<10}{'1 worker s':>12}{'2 workers s':>13}{'efficiency':>12}")
        for executor in [e for e in args.executors.split(",") if e]:
            with cluster(executor) as started_s:
                one = grid_wall(task, executor, 1, args, scratch)
                two = grid_wall(task, executor, 2, args, scratch)
            print(f"{executor:<10}{one:>12.1f}{two:>13.1f}{one / two:>11.2f}x{started_s}", flush=True)
        print(f"\nper-step cost (median of {args.repeat})")
        print(f"{'backend':<10}{'empty call ms':>15}{'tiny step ms':>15}")
        for backend in [b for b in args.backends.split(",") if b]:
            try:
                call, step = step_costs(backend, args.repeat, scratch)
            except SandboxUnavailable as err:
                print(f"{backend:<10}  unavailable: {err}")
                continue
            print(f"{backend:<10}{call * 1000:>15.0f}{step * 1000:>15.0f}", flush=True)


if __name__ == "__main__":
    main()
