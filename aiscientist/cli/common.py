"""Arguments and helpers shared by the subcommands that take a TASK."""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path

from aiscientist.records.paths import RUNS_HOME
from aiscientist.sandbox import BACKENDS
from aiscientist.task import MetricChoice, Task, TaskError, load_task

_METRIC = re.compile(r"^(?P<dataset>[^/]+)/(?P<name>[^:]+)(?::(?P<direction>max|min))?$")


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="a task.yaml, or an FML-bench task folder (config.json + prompt.json)")
    add_selection_arguments(parser)
    add_track_argument(parser)
    parser.add_argument("--run-dir", type=Path, help=f"run folder (default: {RUNS_HOME}/<task>-<time>)")
    parser.add_argument(
        "--sandbox", default="auto", choices=BACKENDS, help="experiment sandbox backend (default: auto)"
    )


def add_track_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--track",
        metavar="mlflow[=URI]|wandb",
        help="copy the run to MLflow (default store ./mlflow.db, or a server URI) or W&B (offline); docs/tracking.md",
    )


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """Options that adjust a loaded task: its metric and its step timeout."""
    parser.add_argument(
        "--metric",
        help="override an FML-bench task's metric: DATASET/METRIC[:max|min] (without a direction, the task's configs "
        "must give one)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="time limit of one experiment step's commands (default: the task's; FML-bench tasks: its own defaults)",
    )


def parse_metric(text: str | None) -> MetricChoice | None:
    if text is None:
        return None
    match = _METRIC.match(text)
    if match is None:
        raise TaskError("--metric", "metric", f"expected DATASET/METRIC[:max|min], got {text!r}")
    return MetricChoice(dataset=match["dataset"], name=match["name"], direction=match["direction"])


def task_from_args(args: argparse.Namespace) -> Task:
    task = load_task(args.task, parse_metric(args.metric))
    if args.timeout is not None:
        if args.timeout <= 0:
            raise TaskError("--timeout", "timeout", "must be a positive number of seconds")
        task = task.model_copy(update={"command_timeout_s": args.timeout})
    return task


def default_run_dir(task: Task) -> Path:
    return Path(RUNS_HOME) / f"{task.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
