"""`aiscientist baseline TASK`: run the unchanged code once and record it."""

from __future__ import annotations

import argparse
import time

from rich.table import Table

from aiscientist.cli.common import add_task_arguments, default_run_dir, task_from_args
from aiscientist.experiment.finish import BASELINE_AGENT, measure_baseline
from aiscientist.util.console import make_console

console = make_console()

HELP = "run a task's baseline once and record it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_task_arguments(parser)
    parser.add_argument("--test", action="store_true", help="also run the hidden test commands once on the baseline")


def run(args: argparse.Namespace) -> int:
    from aiscientist.tracking import parse_spec, track_run
    from aiscientist.workspace import Workspace  # heavy: the experiment engine, git

    tracking = parse_spec(args.track)
    task = task_from_args(args)
    run_dir = args.run_dir or default_run_dir(task)
    if run_dir.exists() and any(run_dir.iterdir()):
        console.print(f"[red]error:[/red] run folder {run_dir} already exists and is not empty", soft_wrap=True)
        return 2
    started = time.monotonic()
    with console.status(f"setting up {task.name} in {run_dir} ..."):
        ws = Workspace.create(task, run_dir, sandbox=args.sandbox)
    steps = " && ".join(task.commands) + (" and the hidden test" if args.test else "")
    params = {"task": task.name, "agent": BASELINE_AGENT, "test": args.test}
    direction = task.metric.direction if task.metric else None
    with console.status(f"running the baseline of {task.name} ({steps}) ..."):
        with track_run(tracking, ws.paths, f"{task.name} baseline", params, {"task": task.name}, direction):
            record, result = measure_baseline(ws, test=args.test, started=started)
    test = result.test

    table = Table(title=f"baseline · {task.name}")
    for column in ("metric", "value", "task's stated baseline", "duration (s)", "status"):
        table.add_column(column)
    value = "-" if record.metric is None else f"{record.metric:.6g}"
    stated = "-" if task.baseline is None else f"{task.baseline:.6g}"
    status = "ok" if record.success else f"[red]{record.error}[/red]"
    if record.constraint_violated:
        status += " [yellow](constraint violated)[/yellow]"
    table.add_row(task.metric.label if task.metric else "-", value, stated, f"{record.duration_s:.1f}", status)
    if test is not None:
        table.add_row(
            "hidden test",
            "-" if test.metric is None else f"{test.metric:.6g}",
            "",
            f"{test.duration_s:.1f}",
            "ok" if test.success else f"[red]{test.error}[/red]",
        )
    console.print(table)
    console.print(f"run folder: {run_dir}  ·  result: {ws.paths.result}")
    return 0 if record.success else 1
