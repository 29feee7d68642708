"""`bench score AGENT_DIR --fml-root ROOT` and `bench export RESULTS OUT`: FML-bench
main's result layout read and written (see `bench.fml_results`, `bench.fml_export`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.fml_metrics import ROW_KEYS, plain, shown

console = Console()
err_console = Console(stderr=True)


def add_arguments(sub: argparse._SubParsersAction) -> None:
    score = sub.add_parser("score", help="score an agent's FML-bench result folder with FML-bench main's metrics")
    score.add_argument("agent_dir", type=Path, help="AGENT_DIR/<Task>/<run>/summary.json, as FML-bench's run_agent_benchmark.py writes it")
    score.add_argument("--fml-root", type=Path, required=True, help="the FML-bench checkout (ml_tasks/<Task>/baseline_results, config.json, workspace/)")
    score.add_argument("--json", action="store_true", help="one JSON object {task: {column: value}}, null where undefined")
    score.add_argument("--embedder", default="auto", choices=["auto", "graphcodebert", "minilm"], help="code embedder of the exploration metrics")
    score.add_argument("--no-exploration", action="store_true", help="skip the four embedding-based exploration metrics")
    export = sub.add_parser("export", help="write a `bench run` results folder in FML-bench main's result layout")
    export.add_argument("results", type=Path, help="a `bench run --out` folder")
    export.add_argument("out", type=Path, help="new folder: OUT/<agent>/<Task>/<run>/ plus a scoring root (OUT/ml_tasks, OUT/workspace)")


def run(args: argparse.Namespace) -> int:
    """Either subcommand; unusable folders are bad input (exit 2)."""
    from bench.fml_results import ResultsError

    try:
        return run_score(args) if args.bench_command == "score" else run_export(args)
    except ResultsError as err:
        err_console.print(f"[red]error:[/red] {err}")
        return 2


def run_score(args: argparse.Namespace) -> int:
    from bench.fml_results import score_agent

    table = score_agent(args.agent_dir, args.fml_root, args.embedder, explore=not args.no_exploration)
    if args.json:
        print(json.dumps({task: plain(row) for task, row in table.items()}, indent=1))
        return 0
    view = Table(title=f"FML-bench metrics · {args.agent_dir.name}")
    view.add_column("column")
    for task in table:
        view.add_column(task, justify="right")
    for column in ROW_KEYS:
        view.add_row(column, *(shown(row.get(column)) for row in table.values()))
    console.print(view)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from bench.fml_export import export_results

    written = export_results(args.results, args.out)
    for agent in written:
        err_console.print(f"exported {agent}; score it with: python -m aiscientist bench score {args.out / agent} --fml-root {args.out}")
    return 0
