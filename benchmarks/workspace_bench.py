"""What the workspace costs: appends per second on the event log, WORKSPACE.md
regeneration with 10 and 1,000 experiment folders, and an experiment's wall
time with the file watcher on and off.

    python benchmarks/workspace_bench.py [--runs 5] [--churn 500] [--json out.json]

Uses the tiny fixture task with the local sandbox. Timings on a shared machine
are noisy: medians over `--runs` repetitions, watcher on/off runs interleaved.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

from aiscientist.records.paths import DIFF, STDERR, STDOUT, in_submission
from aiscientist.task import load_task
from aiscientist.workspace import EventLog, Workspace, verify_run

TINY = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tiny" / "task.yaml"


def appends_per_second(root: Path, n: int = 2000) -> float:
    log = EventLog(root)
    start = time.perf_counter()
    for i in range(n):
        log.record("bench", "bench.append", {"i": i, "note": "x" * 80})
    return n / (time.perf_counter() - start)


def _racer(root: str, n: int) -> None:
    log = EventLog(Path(root))
    for i in range(n):
        log.record("bench", "bench.race", {"i": i})


def racing_appends_per_second(root: Path, procs: int = 4, n: int = 500) -> float:
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_racer, args=(str(root), n)) for _ in range(procs)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return procs * n / (time.perf_counter() - start)


def markdown_appends_per_second(ws: Workspace, n: int = 500) -> float:
    scope = ws.scope("experimentation")
    start = time.perf_counter()
    for i in range(n):
        scope.append("exp_log", f"note {i}: a line of the experiment log\nand a second one")
    return n / (time.perf_counter() - start)


def fill_experiments(ws: Workspace, count: int) -> None:
    """`count` experiment folders shaped like the engine's, from one real step."""
    real = ws.steps()[0]
    for step in range(real.step + 1, count + 1):
        folder = ws.paths.step_dir(step)
        ws.paths.step_code(step).mkdir(parents=True, exist_ok=True)
        for name in (STDOUT, STDERR, DIFF):
            (folder / name).write_text(f"{name} of step {step}\n")
        (ws.paths.step_code(step) / "train.py").write_text("# snapshot\n")
        record = real.model_copy(
            update={"step": step, "metric": 0.2 + (step * 7919 % 1000) / 2000, "hypothesis": f"hypothesis {step}"}
        )
        ws.paths.step_record(step).write_text(record.model_dump_json(indent=1))


def map_seconds(ws: Workspace, runs: int) -> tuple[float, int]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        text = ws.refresh_map()
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(text)


def step_seconds(base: Path, runs: int, churn: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """Wall time of one experiment step without and with the watcher, and the
    CPU time this process spent meanwhile (the experiment runs in children, so
    that is the engine's and the watcher's own cost). `churn` extra files
    written per step stand in for checkpoints and plots."""
    ws = Workspace.create(load_task(TINY), base / f"steps-{churn}", sandbox="local")
    if churn:
        scope = ws.scope("implementation")
        code = (
            f"\nimport pathlib\nout = pathlib.Path('out'); out.mkdir(exist_ok=True)\nfor i in range({churn}):\n    "
            f"(out / f'ckpt_{{i}}.txt').write_text(str(i) * 100)\n"
        )
        scope.write(in_submission("train.py"), scope.read(in_submission("train.py")) + code)
    ws.engine.run_step("bench", "warm-up")
    off, on, cpu_off, cpu_on = [], [], [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        ws.engine.run_step("bench", "watcher off")
        off.append(time.perf_counter() - start)
        cpu_off.append(time.process_time() - cpu)
        with ws.watch(flush_s=0.5) as watcher:
            start, cpu = time.perf_counter(), time.process_time()
            ws.engine.run_step("bench", "watcher on")
            watcher.flush()
            on.append(time.perf_counter() - start)
            cpu_on.append(time.process_time() - cpu)
    assert verify_run(ws.paths.root).clean
    return off, on, cpu_off, cpu_on


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--churn", type=int, default=500, help="files an experiment writes in the heavy variant")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="ws-bench-") as tmp:
        base = Path(tmp)
        ws = Workspace.create(load_task(TINY), base / "run", sandbox="local")
        figures["events_appends_per_s"] = appends_per_second(ws.paths.root)
        figures["events_appends_per_s_4_procs"] = racing_appends_per_second(ws.paths.root)
        figures["markdown_appends_per_s"] = markdown_appends_per_second(ws)
        ws.engine.run_step("bench", "baseline")
        for count in (10, 1000):
            fill_experiments(ws, count)
            seconds, chars = map_seconds(ws, args.runs)
            figures[f"map_s_{count}_steps"] = seconds
            figures[f"map_chars_{count}_steps"] = chars
            start = time.perf_counter()
            with ws.watch():
                figures[f"watcher_start_s_{count}_steps"] = time.perf_counter() - start
        for churn in (0, args.churn):
            off, on, cpu_off, cpu_on = step_seconds(base, args.runs, churn)
            figures[f"step_s_watcher_off_churn{churn}"] = statistics.median(off)
            figures[f"step_s_watcher_on_churn{churn}"] = statistics.median(on)
            figures[f"step_watcher_ratio_churn{churn}"] = statistics.median(on) / statistics.median(off)
            figures[f"step_cpu_s_watcher_off_churn{churn}"] = statistics.median(cpu_off)
            figures[f"step_cpu_s_watcher_on_churn{churn}"] = statistics.median(cpu_on)
        assert verify_run(ws.paths.root).clean
    print(f"events.jsonl appends/s, one process       {figures['events_appends_per_s']:10.0f}")
    print(f"events.jsonl appends/s, 4 processes       {figures['events_appends_per_s_4_procs']:10.0f}")
    print(f"markdown log appends/s (scope.append)     {figures['markdown_appends_per_s']:10.0f}")
    for count in (10, 1000):
        print(
            f"WORKSPACE.md regeneration, {count:4d} steps    {figures[f'map_s_{count}_steps'] * 1000:8.1f} ms  "
            f"({figures[f'map_chars_{count}_steps']:.0f} chars)"
        )
        print(
            f"watcher start, {count:4d} steps                {figures[f'watcher_start_s_{count}_steps'] * 1000:8.1f} ms"
        )
    for churn in (0, args.churn):
        label = "tiny step" if not churn else f"step writing {churn} files"
        print(
            f"{label:28s} wall: off {figures[f'step_s_watcher_off_churn{churn}']:.3f} s · on "
            f"{figures[f'step_s_watcher_on_churn{churn}']:.3f} s · ratio "
            f"{figures[f'step_watcher_ratio_churn{churn}']:.3f}"
        )
        print(
            f"{'':28s} in-process CPU: off {figures[f'step_cpu_s_watcher_off_churn{churn}']:.3f} s · on "
            f"{figures[f'step_cpu_s_watcher_on_churn{churn}']:.3f} s"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
