"""A step that allocates 4x `sandbox.memory_mb` (issue #39), each way it can hold memory: in its
processes, in a tmpfs (`/tmp`), in shared memory (a `/dev/shm` file and anonymous shared pages).
Each runs as a real step of the experiment engine on a one-file task; the table shows the step's
peak (processes + tmpfs + shared memory, from its cgroup) against the cap and its cause. Then the
per-step cost of the memory cgroup: a tiny step timed with and without it.

    python benchmarks/memory_cap.py                       # bwrap, cap 256 MB
    python benchmarks/memory_cap.py --sandbox docker --cap-mb 512
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from aiscientist.sandbox import SandboxSettings, get_sandbox
from aiscientist.task import load_task
from aiscientist.workspace import Workspace

METRIC = """python3 -c 'import json; json.dump({"d": {"means": {"m_mean": 1.0}}}, open("final_info.json", "w"))'"""
WAYS = {
    "processes": "python3 -c 'x = bytearray({n} << 20)'",
    "tmpfs (/tmp)": "head -c {n}M /dev/zero > /tmp/fill",
    "shared memory (/dev/shm file)": "head -c {n}M /dev/zero > /dev/shm/fill",
    "shared memory (anonymous pages)": "python3 -c 'import mmap; mmap.mmap(-1, {n} << 20, flags=mmap.MAP_SHARED)"
    ".write(bytes({n} << 20))'",
}


def workspace(root: Path, settings: SandboxSettings, command: str) -> Workspace:
    repo = root / "spec" / "repo"
    repo.mkdir(parents=True)
    (repo / "step.sh").write_text(f"{command}\n{METRIC}\n")
    spec = {
        "name": "memory-cap",
        "repository": "repo",
        "metric": {"dataset": "d", "name": "m", "direction": "max"},
        "command_timeout_s": 120,
        "commands": ["bash step.sh"],
    }
    (root / "spec" / "task.yaml").write_text(yaml.safe_dump(spec))
    return Workspace.create(load_task(root / "spec" / "task.yaml"), root / "run", sandbox=settings)


def step_ms(root: Path, settings: SandboxSettings, runs: int) -> tuple[float, float]:
    """Median wall time (ms) of a tiny step (one command writing the metric) with the memory cgroup and
    without it (`memory_mb` None: no memory limit at all), the two run in turn so load hits both alike."""
    kinds = {"with": settings, "without": settings.model_copy(update={"memory_mb": None})}
    spaces = {name: workspace(root / name, s, "true") for name, s in kinds.items()}
    times: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(runs):
        for name, ws in spaces.items():
            started = time.perf_counter()
            assert ws.engine.run_step("benchmark", "tiny").success
            times[name].append((time.perf_counter() - started) * 1000)
    return statistics.median(times["with"]), statistics.median(times["without"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--cap-mb", type=int, default=256)
    parser.add_argument("--runs", type=int, default=20, help="tiny steps timed each way")
    args = parser.parse_args()
    settings = SandboxSettings(backend=args.sandbox, memory_mb=args.cap_mb)
    print(f"sandbox {args.sandbox}, memory held by: {get_sandbox(settings).memory_enforcement()}")
    print(f"each step allocates {4 * args.cap_mb} MB (4x sandbox.memory_mb = {args.cap_mb})\n")
    print("| way | peak / cap (MB) | cause | error |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="memory-cap-") as tmp:
        for i, (way, command) in enumerate(WAYS.items()):
            ws = workspace(Path(tmp, str(i)), settings, command.format(n=4 * args.cap_mb))
            record = ws.engine.run_step("benchmark", way)
            peak = "n/a" if record.peak_memory_mb is None else f"{record.peak_memory_mb:g}"
            print(f"| {way} | {peak} / {args.cap_mb} | {record.cause} | {(record.error or '')[:90]} |")
        with_ms, without_ms = step_ms(Path(tmp, "tiny"), settings, args.runs)
    print(
        f"\ntiny step (one command writing the metric), median of {args.runs}: {with_ms:.1f} ms with the memory "
        f"cgroup, {without_ms:.1f} ms without: {with_ms - without_ms:+.1f} ms ({(with_ms / without_ms - 1):+.1%})"
    )


if __name__ == "__main__":
    main()
