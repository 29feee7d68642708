"""`python -m aiscientist bench run|report|agents|score|export`."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.text import Text

from aiscientist.cli.common import add_track_argument
from aiscientist.records.cell import CELL_ERROR, REPORT, RUNS, has_runs
from aiscientist.sandbox import BACKENDS
from aiscientist.tracking import parse_spec
from aiscientist.util.console import make_console
from aiscientist.util.text import clean
from bench.agents import agent_names, load_all
from bench.cli import peers
from bench.grid.executors import EXECUTORS, ExecutorUnavailable

BENCH_ROOT = Path(__file__).resolve().parents[1]  # bench/: its tasks/ and papers/
EMBEDDERS = ["auto", "graphcodebert", "minilm"]
console = make_console(stderr=True, soft_wrap=True)

HELP = "benchmark agents on tasks and report FML-bench metrics"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench_command", required=True, metavar="{run,report,agents,score,export,peers}")
    run = sub.add_parser("run", help="run a grid of agents × tasks × rounds (resumable)")
    run.add_argument(
        "--agents",
        required=True,
        help=f"comma-separated agent names: {', '.join(agent_names())} (`bench agents` lists their tools)",
    )
    run.add_argument(
        "--tasks",
        default="all",
        help="comma-separated task names (bench/tasks/<name>, bench/papers/<name>), task.yaml paths, or 'all'",
    )
    run.add_argument(
        "--rounds", type=int, default=3, help="independent runs per agent and task; a task's result is its best round"
    )
    run.add_argument("--steps", type=int, default=100, help="experiment steps assigned to each run")
    run.add_argument(
        "--wall-time",
        dest="wall_time_s",
        type=float,
        default=None,
        metavar="S",
        help="seconds of wall clock each run gets, from its start (--steps stays a cap: give a large one)",
    )
    run.add_argument(
        "--model", default=None, help="model for model-driven agents (litellm name, 'offline' or 'scripted:PATH')"
    )
    run.add_argument(
        "--judge-model", default=None, help="model of the academic/engineering judge (default: --model, else offline)"
    )
    run.add_argument("--out", required=True, type=Path, help="results folder (re-running with it continues the grid)")
    run.add_argument("--workers", type=int, default=None, help="parallel runs (default: sized to the machine)")
    run.add_argument(
        "--cores-per-run",
        type=int,
        default=None,
        help="cores each run is pinned to (default: the machine's cores shared evenly)",
    )
    run.add_argument("--sandbox", default="auto", choices=BACKENDS)
    run.add_argument(
        "--executor",
        default="pool",
        choices=EXECUTORS,
        help="where runs execute: a local process pool, or Ray (a local cluster, or --address)",
    )
    run.add_argument(
        "--address", default=None, help="ray: address of an existing cluster (ray://HOST:10001, HOST:6379 or auto)"
    )
    run.add_argument("--seed", type=int, default=0, help="base seed; each run derives its own from it")
    run.add_argument("--embedder", default="auto", choices=EMBEDDERS)
    run.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="AGENT.KEY=VALUE",
        help="agent option, e.g. external.command='my-agent' (repeatable)",
    )
    run.add_argument("--no-progress", action="store_true", help="no live table: one line per finished cell")
    add_track_argument(run)
    run.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    report = sub.add_parser(
        "report", help="write markdown/CSV tables, PNG plots and an HTML page from a results folder"
    )
    report.add_argument("results", type=Path)
    report.add_argument("--out", type=Path, default=None, help=f"report folder (default RESULTS/{REPORT})")
    agents = sub.add_parser(
        "agents", help="the tools each agent and role may call (the one table of aiscientist.agent.toolsets)"
    )
    agents.add_argument("--json", action="store_true", help="print the table as JSON")
    score = sub.add_parser("score", help="score an agent's FML-bench result folder with FML-bench main's metrics")
    score.add_argument(
        "agent_dir",
        type=Path,
        help="AGENT_DIR/<Task>/<run>/summary.json, as FML-bench's run_agent_benchmark.py writes it",
    )
    score.add_argument(
        "--fml-root",
        type=Path,
        required=True,
        help="the FML-bench checkout (ml_tasks/<Task>/baseline_results, config.json, workspace/)",
    )
    score.add_argument(
        "--json", action="store_true", help="one JSON object {task: {column: value}}, null where undefined"
    )
    score.add_argument("--embedder", default="auto", choices=EMBEDDERS, help="code embedder of the exploration metrics")
    score.add_argument(
        "--no-exploration", action="store_true", help="skip the four embedding-based exploration metrics"
    )
    export = sub.add_parser("export", help="write a `bench run` results folder in FML-bench main's result layout")
    export.add_argument("results", type=Path, help="a `bench run --out` folder")
    export.add_argument(
        "out", type=Path, help="new folder: OUT/<agent>/<Task>/<run>/ plus a scoring root (OUT/ml_tasks, OUT/workspace)"
    )
    peers.add_parser(sub)


def parse_options(items: list[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        agent, dot, name = key.partition(".")
        if not sep or not dot or not agent or not name:
            raise ValueError(f"--option {item!r}: expected AGENT.KEY=VALUE")
        options.setdefault(agent, {})[name] = value
    return options


def run(args: argparse.Namespace) -> int:
    if args.bench_command == "report":
        return _report(args.results, args.out)
    if args.bench_command == "peers":
        return peers.run(args)
    if args.bench_command == "agents":
        from aiscientist.agent import toolsets

        load_all()  # every agent's module registers it
        print(json.dumps(toolsets.rows(), indent=1) if args.json else toolsets.markdown())
        return 0
    if args.bench_command in ("score", "export"):
        from bench.fml.results import ResultsError

        try:
            return _score(args) if args.bench_command == "score" else _export(args)
        except ResultsError as err:  # an unusable folder is bad input
            console.print(f"[red]error:[/red] {err}")
            return 2
    from pydantic import ValidationError

    from bench.agents import UnknownAgent, check_options
    from bench.grid.runner import GridConfig, resolve_tasks, run_grid

    try:
        settings = {
            k: v
            for k, v in vars(args).items()
            if k in GridConfig.model_fields and k not in ("agents", "tasks", "options")
        }
        config = GridConfig(
            **settings,
            agents=[a.strip() for a in args.agents.split(",") if a.strip()],
            tasks=resolve_tasks([t.strip() for t in args.tasks.split(",") if t.strip()], BENCH_ROOT),
            options=parse_options(args.option),
            tracking=args.track,
        )
        _check_models(config)
        parse_spec(config.tracking)  # a bad --track or a missing extra fails before any work
        check_options(config.options)
        if config.address and config.executor != "ray":
            raise ValueError("--address is the address of a Ray cluster: use it with --executor ray")
    except (ValidationError, ValueError) as err:
        if isinstance(err, ValidationError):
            first = err.errors()[0]
            err = ValueError(f"--{'.'.join(map(str, first['loc'])).replace('_', '-')}: {first['msg']}")
        console.print(f"[red]error:[/red] {err}")
        return 2
    started = time.monotonic()
    try:
        outcome = run_grid(config, args.out, progress=not args.no_progress)
    except (UnknownAgent, ExecutorUnavailable) as err:
        console.print(f"[red]error:[/red] {err}")
        return 2
    console.print(
        f"bench: {outcome['runs']} runs, {outcome['ran']} run now, {len(outcome['failed'])} failed, "
        f"{time.monotonic() - started:.1f}s"
    )
    for name, error in outcome["failed"].items():
        # a run's error may quote what its experiments printed: one escaped line, never markup
        where = f"(see {RUNS}/.../{CELL_ERROR})"
        console.print(Text.assemble(("failed", "red"), f" {clean(name)}: {clean(error, 500)} {where}"))
    if not args.no_report:
        _report(args.out, None)
    return 1 if outcome["failed"] else 0


def _check_models(config) -> None:
    """Model-driven agents need --model; a bad model name fails before any work."""
    from bench.agents import get_agent
    from bench.peers.specs import PeerEnvError, prepare

    try:
        prepare(config.agents, progress=console.print)
    except PeerEnvError as err:
        raise ValueError(str(err)) from None
    needing = [a for a in config.agents if get_agent(a).needs_model]
    if needing and not config.model:
        raise ValueError(f"--model is required for {', '.join(needing)} (use --model offline for the offline policy)")
    from aiscientist.llm import make_client

    for model in {m for m in (config.model, config.judge_model) if m}:
        make_client(model)


def _report(results: Path, out: Path | None) -> int:
    from bench.scoring.report import write_report

    if not has_runs(results):
        console.print(f"[red]error:[/red] {results} holds no {RUNS}/ folder (is it a `bench run --out` folder?)")
        return 2
    index = write_report(results, out)
    console.print(f"report: {index}")
    from bench.fml.export import write_fml_table
    from bench.fml.results import ResultsError

    try:
        console.print(f"FML-bench table: {write_fml_table(results, index.parent)}")
    except (ResultsError, OSError) as err:
        console.print(f"[yellow]no FML-bench table:[/yellow] {err}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from rich.table import Table

    from bench.fml.results import score_agent
    from bench.scoring.fml_metrics import ROW_KEYS, plain, shown

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
    make_console().print(view)
    return 0


def _export(args: argparse.Namespace) -> int:
    from bench.fml.export import export_results

    written = export_results(args.results, args.out)
    for agent in written:
        console.print(
            f"exported {agent}; score it with: python -m aiscientist bench score {args.out / agent} --fml-root "
            f"{args.out}"
        )
    return 0
