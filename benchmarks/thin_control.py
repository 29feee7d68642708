"""Thin control, measured: does the orchestrator's context stay flat over a long run?

Runs `solve` for N steps (default 100) with the offline model on a task (default: the
tiny test fixture) in three arms - File-as-Bus on, File-as-Bus off, hierarchy off
(flat) - and prints, per arm:

- the deciding agent's prompt tokens per decision: median over the decisions made
  while working towards steps 1-10 and towards the last ten steps, and their ratio;
- the framework's own overhead per step: wall time between the ends of consecutive
  steps, minus the model's replies and the experiment commands inside that window
  (median and mean over steps, and median over the last ten steps).

The offline policy tries each tunable literal of the editable code once and stops when none
is left (the tiny task has a handful: about 13 steps). So that a run reaches N steps, the
script runs a copy of the task whose first editable Python file ends in `--padding` extra
constants the code never reads (default: one per step; 0 runs the task as it is): each
step then changes one of them, the experiment itself stays as short as the task's.

Goals (File-as-Bus on): late/early prompt ratio <= 1.25; overhead median <= 20 ms/step;
the last ten steps' median <= 1.3x the whole run's.

    python benchmarks/thin_control.py [--steps 100] [--arms bus,nobus,flat] [--sandbox local] [--padding N] [--keep DIR]

Issue #40's figure: `python benchmarks/thin_control.py --steps 300 --arms bus`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiscientist.config import load_config  # noqa: E402
from aiscientist.llm.client import LLMClient  # noqa: E402
from aiscientist.orchestrator import solve  # noqa: E402
from aiscientist.records.paths import RunPaths  # noqa: E402
from aiscientist.task import Task, load_task  # noqa: E402

MODEL_CALLS: list[tuple[float, float]] = []  # (end time, duration) of every model reply


def _timed_obtain(original):
    """Time only obtaining the model's reply (the backend, its retries, a replay); the
    client's own work around it - token counting, fitting, budget, records - is the
    framework's."""

    def obtain(self, *args, **kwargs):
        started = time.time()
        try:
            return original(self, *args, **kwargs)
        finally:
            MODEL_CALLS.append((time.time(), time.time() - started))

    return obtain


LLMClient._obtain = _timed_obtain(LLMClient._obtain)

ARMS = {"bus": [], "nobus": ["file_bus=false"], "flat": ["hierarchy=false"]}


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def padded(task: Task, count: int, folder: Path) -> Task:
    """A copy of `task` whose first editable Python file ends in `count` constants nothing reads."""
    target = next((rel for rel in task.editable if rel.endswith(".py") and (task.repository / rel).is_file()), None)
    if count <= 0 or target is None:
        return task
    repo = folder / "repo"
    shutil.copytree(task.repository, repo)
    knobs = "".join(f"UNUSED_KNOB_{i} = {0.1 + i / 1000:.3f}\n" for i in range(count))
    with (repo / target).open("a") as out:
        out.write(f"\n# {count} constants the code never reads: candidates for a long offline run\n{knobs}")
    return task.model_copy(update={"repository": repo})


def measure(run_dir: Path, steps: int) -> dict:
    events = _lines(RunPaths(run_dir).events)
    decisions = [e["payload"] for e in events if e["kind"] == "orchestrator.decision"]
    window = min(10, steps // 2)
    early = [d["prompt_tokens"] for d in decisions if d["steps_done"] < window]
    late = [d["prompt_tokens"] for d in decisions if steps - window <= d["steps_done"] < steps]
    ends = {e["payload"]["step"]: _ts(e["ts"]) for e in events if e["kind"] == "experiment.end"}
    durations = {
        int(p.parent.name[5:]): json.loads(p.read_text())["duration_s"] for p in RunPaths(run_dir).step_records()
    }
    call_spans = list(MODEL_CALLS)
    MODEL_CALLS.clear()
    overhead = []
    for step in sorted(ends)[1:]:
        start, end = ends[step - 1], ends[step]
        model = sum(latency for stamp, latency in call_spans if start < stamp <= end)
        overhead.append(end - start - model - durations[step])
    return {
        "decisions": len(decisions),
        "prompt_early_median": statistics.median(early) if early else None,
        "prompt_late_median": statistics.median(late) if late else None,
        "prompt_ratio": (statistics.median(late) / statistics.median(early)) if early and late else None,
        "overhead_ms_median": 1000 * statistics.median(overhead) if overhead else None,
        "overhead_ms_mean": 1000 * statistics.mean(overhead) if overhead else None,
        "overhead_ms_late_median": 1000 * statistics.median(overhead[-window:]) if overhead else None,
        "steps_done": len(durations),
        "model_s": sum(latency for _, latency in call_spans),
        "experiment_s": sum(durations.values()),
        "window": window,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--arms", default="bus,nobus,flat", help="comma-separated subset of bus, nobus, flat")
    parser.add_argument("--task", type=Path, default=ROOT / "tests" / "fixtures" / "tiny" / "task.yaml")
    parser.add_argument("--sandbox", default="local", choices=["auto", "bwrap", "local"])
    parser.add_argument(
        "--padding", type=int, help="unused constants added to the task's code (default: --steps; 0: none)"
    )
    parser.add_argument("--keep", type=Path, help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARMS)}")
    console = Console(width=200)
    figures = {}
    with tempfile.TemporaryDirectory(prefix="thin-control-") as tmp:
        base = args.keep or Path(tmp)
        task = padded(load_task(args.task), args.steps if args.padding is None else args.padding, Path(tmp))
        for arm in arms:
            run_dir = base / f"{task.name}-{arm}"
            config = load_config([], [f"sandbox={args.sandbox}", *ARMS[arm]])
            started = time.monotonic()
            result = solve(task, run_dir, config, model="offline", steps=args.steps)
            figures[arm] = {
                **measure(run_dir, args.steps),
                "wall_s": time.monotonic() - started,
                "best": result.best_metric,
                "stop": result.stop_reason[:80],
            }
            console.print(
                f"{arm}: {figures[arm]['steps_done']} steps in {figures[arm]['wall_s']:.1f} s", highlight=False
            )
    w = figures[arms[0]]["window"]
    table = Table(title=f"Thin control · {task.name} · {args.steps} steps · offline model · sandbox {args.sandbox}")
    for column in (
        "arm",
        "decisions",
        f"prompt tok, steps 1-{w} (median)",
        f"prompt tok, steps {args.steps - w + 1}-{args.steps} (median)",
        "late/early",
        "overhead ms/step (median)",
        "overhead ms/step (mean)",
        f"overhead ms/step, last {w} (median)",
        "model s",
        "experiments s",
        "wall s",
    ):
        table.add_column(column, justify="right")
    fmt = lambda v, f="{:.0f}": "-" if v is None else f.format(v)  # noqa: E731
    for arm, f in figures.items():
        table.add_row(
            arm,
            str(f["decisions"]),
            fmt(f["prompt_early_median"]),
            fmt(f["prompt_late_median"]),
            fmt(f["prompt_ratio"], "{:.2f}x"),
            fmt(f["overhead_ms_median"], "{:.1f}"),
            fmt(f["overhead_ms_mean"], "{:.1f}"),
            fmt(f["overhead_ms_late_median"], "{:.1f}"),
            fmt(f["model_s"], "{:.1f}"),
            fmt(f["experiment_s"], "{:.1f}"),
            fmt(f["wall_s"], "{:.1f}"),
        )
    console.print(table)
    if "bus" in figures:
        bus = figures["bus"]
        ok_prompt = bus["prompt_ratio"] is not None and bus["prompt_ratio"] <= 1.25
        ok_overhead = bus["overhead_ms_median"] is not None and bus["overhead_ms_median"] <= 20
        late_ratio = bus["overhead_ms_late_median"] / bus["overhead_ms_median"] if bus["overhead_ms_median"] else None
        ok_flat = late_ratio is not None and late_ratio <= 1.3
        verdict = lambda ok: "met" if ok else "NOT met"  # noqa: E731
        console.print(
            f"goals (bus on): prompt ratio <= 1.25x {verdict(ok_prompt)} · overhead median <= 20 ms/step "
            f"{verdict(ok_overhead)} · last {w} median <= 1.3x the run's ({fmt(late_ratio, '{:.2f}x')}) "
            f"{verdict(ok_flat)}",
            highlight=False,
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
