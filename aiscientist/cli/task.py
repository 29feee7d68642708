"""`aiscientist task show PATH [--json]`: the task as it was parsed, nothing run."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from aiscientist.cli.common import add_selection_arguments, task_from_args
from aiscientist.task import Task
from aiscientist.util.console import make_console

console = make_console()

HELP = "inspect a task (task show PATH [--json])"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="task_command", required=True, metavar="{show}")
    show = sub.add_parser(
        "show", help="print a parsed task (task.yaml or FML-bench folder of either branch) without running it"
    )
    show.add_argument("task", help="a task.yaml, or an FML-bench task folder")
    add_selection_arguments(show)
    show.add_argument("--json", action="store_true", help="one JSON object instead of a table")


FORGEABLE = (
    "this task's scores can be forged by the code it runs: its evaluator shares a process with editable code"
    " (no run / score split; see docs/contracts.md, Scoring)"
)


def describe(task: Task) -> dict[str, Any]:
    """The facts a user checks before running a task."""
    metric = task.metric
    return {
        "name": task.name,
        "layout": task.layout,
        "kind": task.kind,
        "source": str(task.source) if task.source else None,
        "repository": str(task.repository),
        "dataset": metric.dataset if metric else None,
        "metric": metric.name if metric else None,
        "direction": metric.direction if metric else None,
        "baseline_val": task.baseline,
        "baseline_test": task.baseline_test,
        "commands": {
            "setup": task.setup_commands,
            "preprocess": task.preprocess_commands,
            "val": task.commands,
            "postprocess": task.postprocess_commands,
            "test": task.test_commands,
        },
        "files": {
            "editable": task.editable,
            "protected": task.protected,
            "related": task.related,
            "hidden": task.hidden,
        },
        "score": {
            "isolated": task.score_isolated,
            "artifacts": task.artifacts,
            "scorer": task.scorer,
            "val": task.score,
            "test": task.test_score,
        },
        "metrics_file": task.metrics_file,
        "test_metrics_file": task.test_metrics_file or (task.metrics_file if task.test_commands else None),
        "outputs_dir": task.outputs_dir,
        "outside_paths": [str(p) for p in task.outside_paths],
        "conda_env": task.conda_env,
        "timeouts_s": {phase: task.timeout(phase) for phase in ("preprocess", "commands", "postprocess", "test")},
    }


def run(args: argparse.Namespace) -> int:
    facts = describe(task_from_args(args))
    if args.json:
        print(json.dumps(facts, indent=1))
        return 0
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in facts.items():
        if isinstance(value, dict):
            for sub, item in value.items():
                table.add_row(f"{key}.{sub}", _text(item))
        else:
            table.add_row(key, _text(value))
    console.print(table)
    if not facts["score"]["isolated"]:
        console.print(f"[yellow]warning:[/] {FORGEABLE}")
    return 0


def _text(value: object) -> str:
    if isinstance(value, list):
        return "\n".join(map(str, value)) or "-"
    return "-" if value is None else str(value)
