"""FML-CPU-8 figures: per task, the baseline metric over several seeds, one
experiment's wall time and peak memory, and the metric of the known better
method in tests/fml_cpu8_improved/<task>.patch.

    python benchmarks/fml_cpu8_table.py                        # all eight, seeds 0 1 2
    python benchmarks/fml_cpu8_table.py --tasks privacy fairness --seeds 0
    python benchmarks/fml_cpu8_table.py --no-improved --smoke  # quick check of the pipeline

Every experiment runs the task's validation `commands` in a fresh copy of its
repository with FML_CPU8_SEED set (and FML_CPU8_SMOKE=1 with --smoke). Peak
memory is the largest resident set of the command's process tree (wait4's
ru_maxrss); CPU s is user + system time of that tree. Wall times on a shared
machine are noisy; CPU time is the steadier measure of cost. Wall time and CPU
are medians over the seeds.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from aiscientist.records.metrics_file import MetricsError, load_means, pick
from aiscientist.task import Task, TaskError, load_task

ROOT = Path(__file__).resolve().parents[1]
TASKS = [
    "generalization",
    "data_efficiency",
    "representation_learning",
    "continual_learning",
    "causality",
    "robustness",
    "privacy",
    "fairness",
]
PATCHES = ROOT / "tests" / "fml_cpu8_improved"


@dataclass
class Run:
    metric: float | None
    wall_s: float
    cpu_s: float
    peak_mib: float
    constraints_ok: bool
    error: str = ""


@dataclass
class Row:
    task: str
    note: str = ""
    spec: str = ""
    recorded: float | None = None
    baseline: list[Run] = field(default_factory=list)
    improved: list[Run] = field(default_factory=list)


def run_commands(
    commands: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[float, float, float, str]:
    """Run `commands` in order through bash; (wall s, CPU s, peak MiB, error or '')."""
    start, peak_kib, cpu = time.monotonic(), 0, 0.0
    err_path = cwd / ".fml_cpu8_stderr"
    for command in commands:
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(
                ["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)
                _, status, usage = os.wait4(proc.pid, 0)
                return time.monotonic() - start, cpu, usage.ru_maxrss / 1024, f"timed out after {timeout:g}s: {command}"
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        peak_kib = max(peak_kib, usage.ru_maxrss)
        cpu += usage.ru_utime + usage.ru_stime
        if proc.returncode != 0:
            tail = (err_path.read_text(errors="replace").strip().splitlines() or [""])[-1]
            return time.monotonic() - start, cpu, peak_kib / 1024, f"exit {proc.returncode}: {command}: {tail[:200]}"
    return time.monotonic() - start, cpu, peak_kib / 1024, ""


def experiment(task: Task, seed: int, smoke: bool, patch: Path | None = None) -> Run:
    """One experiment (the validation commands, then the score commands) in a temporary repository copy."""
    with tempfile.TemporaryDirectory(prefix="fml-cpu8-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(task.repository, repo, ignore=shutil.ignore_patterns("__pycache__", "final_info*.json"))
        if patch is not None:
            applied = subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=repo, capture_output=True, text=True)
            if applied.returncode != 0:
                return Run(
                    None, 0.0, 0.0, 0.0, False, f"patch failed: {applied.stdout.strip() or applied.stderr.strip()}"
                )
        env = {**os.environ, "FML_CPU8_SEED": str(seed), "HOME": tmp}
        env.pop("FML_CPU8_SMOKE", None)
        if smoke:
            env["FML_CPU8_SMOKE"] = "1"
        # the run, then its score (a split task's evaluator writes the metrics file into the working folder
        # when $SCORE_OUT is unset; the engine runs it in an invocation of its own)
        wall, cpu, peak, error = run_commands(
            task.setup_commands + task.commands + task.score, repo / task.working_dir, env, task.command_timeout_s
        )
        if error:
            return Run(None, wall, cpu, peak, False, error)
        try:
            means = load_means(task.metrics_path(repo))
            metric = pick(means, task.metric.dataset, task.metric.key)
            ok = all(c.holds(pick(means, c.dataset, c.key)) for c in task.constraints)
        except MetricsError as err:
            return Run(None, wall, cpu, peak, False, str(err))
        return Run(metric, wall, cpu, peak, ok)


def measure(name: str, tasks_dir: Path, seeds: list[int], smoke: bool, improved: bool) -> Row:
    yaml_path = tasks_dir / name / "task.yaml"
    if not yaml_path.is_file():
        return Row(name, note="not present yet")
    try:
        task = load_task(yaml_path)
    except TaskError as err:
        return Row(name, note=f"task does not load: {err}")
    row = Row(name, spec=f"{task.metric.label} ({task.metric.direction})", recorded=task.baseline)
    for seed in seeds:
        row.baseline.append(experiment(task, seed, smoke))
        print(f"[{name}] baseline seed {seed}: {_fmt_run(row.baseline[-1])}", file=sys.stderr, flush=True)
    patch = PATCHES / f"{name}.patch"
    if improved and patch.is_file():
        for seed in seeds:
            row.improved.append(experiment(task, seed, smoke, patch))
            print(f"[{name}] improved seed {seed}: {_fmt_run(row.improved[-1])}", file=sys.stderr, flush=True)
    elif improved:
        row.note = f"no {patch.relative_to(ROOT)}"
    return row


def _fmt_run(run: Run) -> str:
    if run.metric is None:
        return f"FAILED ({run.error})"
    return f"{run.metric:.4f} in {run.wall_s:.1f}s (CPU {run.cpu_s:.1f}s), {run.peak_mib:.0f} MiB" + (
        "" if run.constraints_ok else " (constraint violated)"
    )


def _summary(runs: list[Run]) -> str:
    values = [r.metric for r in runs if r.metric is not None]
    if not values:
        return "failed" if runs else "-"
    text = f"{statistics.mean(values):.4f}"
    if len(values) > 1:
        text += f" ± {statistics.stdev(values):.4f}"
    failed = len(runs) - len(values)
    return text + (f" ({failed} failed)" if failed else "")


def table(rows: list[Row], seeds: list[int]) -> str:
    lines = [
        f"| task | metric | recorded baseline | baseline mean ± sd (seeds {','.join(map(str, seeds))}) | range | wall "
        "s (1 exp) | CPU s | peak MiB | improved (patch) | constraints (improved) | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ok = [r for r in row.baseline if r.metric is not None]
        spread = f"{min(r.metric for r in ok):.4f}–{max(r.metric for r in ok):.4f}" if ok else "-"
        wall = f"{statistics.median(r.wall_s for r in ok):.1f}" if ok else "-"
        cpu = f"{statistics.median(r.cpu_s for r in ok):.1f}" if ok else "-"
        peak = f"{max(r.peak_mib for r in ok):.0f}" if ok else "-"
        recorded = "-" if row.recorded is None or not math.isfinite(row.recorded) else f"{row.recorded:.4f}"
        constraints = "-" if not row.improved else ("ok" if all(r.constraints_ok for r in row.improved) else "violated")
        lines.append(
            f"| {row.task} | {row.spec or '-'} | {recorded} | {_summary(row.baseline)} | {spread} | {wall} | {cpu} | "
            f"{peak} | {_summary(row.improved)} | {constraints} | {row.note} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=TASKS, help="task folder names under --tasks-dir")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--tasks-dir", type=Path, default=ROOT / "bench" / "tasks")
    parser.add_argument(
        "--smoke", action="store_true", help="reduced sizes (FML_CPU8_SMOKE=1); the real figures use full size"
    )
    parser.add_argument("--no-improved", action="store_true", help="skip the improved-method runs")
    args = parser.parse_args(argv)
    unknown = [t for t in args.tasks if not (args.tasks_dir / t).is_dir() and t not in TASKS]
    if unknown:
        parser.error(f"unknown task(s): {', '.join(unknown)}; known: {', '.join(TASKS)}")
    rows = [measure(name, args.tasks_dir, args.seeds, args.smoke, not args.no_improved) for name in args.tasks]
    print(table(rows, args.seeds))
    failed = any(r.metric is None for row in rows for r in row.baseline + row.improved)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
