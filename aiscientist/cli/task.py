"""`aiscientist task show PATH [--json]`: the task as it was parsed, none of its commands run;
`aiscientist task init REPO --run CMD --metric NAME:min|max`: write one (`cli/task_init.py`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.table import Table

from aiscientist.cli.common import add_selection_arguments, task_from_args
from aiscientist.cli.task_init import add_init_arguments, run_init
from aiscientist.sandbox import BACKENDS
from aiscientist.task import Task, TaskError
from aiscientist.util.console import make_console

console = make_console()

HELP = "write a task for your repository (task init) or inspect one (task show)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="task_command", required=True, metavar="{show,init}")
    show = sub.add_parser(
        "show",
        help="print a parsed task (task.yaml or FML-bench folder of either branch) without running it; its programs "
        "by absolute path and its modules' imports are looked up inside the sandbox",
    )
    show.add_argument("task", help="a task.yaml, or an FML-bench task folder")
    add_selection_arguments(show)
    show.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    show.add_argument("--sandbox", default="auto", choices=BACKENDS, help="the sandbox to look up in (default: auto)")
    init = sub.add_parser(
        "init", help="write REPO/task.yaml for your own repository, its baseline measured in the sandbox"
    )
    init.add_argument("repo", metavar="REPO", help="the repository's folder")
    init.add_argument("--metric", required=True, metavar="NAME:min|max", help="the metric the run prints as "
                      "'NAME: number' (or NAME=number), and whether lower (min) or higher (max) is better")  # fmt: skip
    add_init_arguments(init)
    init.add_argument("--scorer-stub", action="store_true", help="write the --score command's script (evaluate.py) "
                      "as a documented stub that writes the metrics file, and stop")  # fmt: skip
    init.add_argument("--out", type=Path, metavar="FILE", help="where to write the task (default: REPO/task.yaml)")
    init.add_argument("--force", action="store_true", help="overwrite an existing task file")
    init.add_argument("--sandbox", default="auto", choices=BACKENDS, help="experiment sandbox backend (default: auto)")


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
        "metric_source": task.metric_source,
        "metrics_file": task.metrics_file,
        "test_metrics_file": task.test_metrics_file or (task.metrics_file if task.test_commands else None),
        "outputs_dir": task.outputs_dir,
        "outside_paths": [str(p) for p in task.outside_paths],
        "conda_env": task.conda_env,
        "timeouts_s": {phase: task.timeout(phase) for phase in ("preprocess", "commands", "postprocess", "test")},
    }


def run(args: argparse.Namespace) -> int:
    if args.task_command == "init":
        return run_init(args)
    task = task_from_args(args)
    _check_environment(task, args.sandbox)
    facts = describe(task)
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


def _check_environment(task: Task, sandbox: str) -> None:
    """What only the sandbox can tell (preflight's look-ups); a task that cannot be looked up
    there (it needs conda, which is missing) is shown with a warning, not refused."""
    from aiscientist.experiment.runenv import conda_command
    from aiscientist.orchestrator.preflight import check_environment

    try:
        conda_command(task)
    except TaskError as err:
        make_console(stderr=True).print(
            f"[yellow]warning:[/] not looked up inside the sandbox: {err.reason}", soft_wrap=True
        )
        return
    check_environment(task, sandbox)


def _text(value: object) -> str:
    if isinstance(value, list):
        return "\n".join(map(str, value)) or "-"
    return "-" if value is None else str(value)
