"""Arguments and helpers shared by the subcommands that take a TASK."""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path

from aiscientist.sandbox import BACKENDS
from aiscientist.task import MetricSpec, Task, TaskError, load_task

_METRIC = re.compile(r"^(?P<dataset>[^/]+)/(?P<name>[^:]+)(?::(?P<direction>max|min))?$")


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="a task.yaml, or an FML-bench task folder (config.json + prompt.json)")
    parser.add_argument("--metric", help="for FML-bench folders without metric.yaml: DATASET/METRIC[:max|min]")
    parser.add_argument("--run-dir", type=Path, help="run folder (default: runs/<task>-<time>)")
    parser.add_argument("--sandbox", default="auto", choices=BACKENDS, help="experiment sandbox backend (default: auto)")


def parse_metric(text: str | None) -> MetricSpec | None:
    if text is None:
        return None
    match = _METRIC.match(text)
    if match is None:
        raise TaskError("--metric", "metric", f"expected DATASET/METRIC[:max|min], got {text!r}")
    return MetricSpec(dataset=match["dataset"], name=match["name"], direction=match["direction"] or "max")


def task_from_args(args: argparse.Namespace) -> Task:
    return load_task(args.task, parse_metric(args.metric))


def default_run_dir(task: Task) -> Path:
    return Path("runs") / f"{task.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
