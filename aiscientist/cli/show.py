"""`aiscientist show RUN_DIR`: write the run's page and print its path."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from aiscientist.records.cell import CellPaths
from aiscientist.util.console import make_console

console = make_console()
CELL_HELP = CellPaths.of(Path("OUT"), "TASK", "AGENT", "K").root

HELP = "write a run folder's self-contained HTML page and print its path"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", type=Path, help=f"a run folder made by solve, or a bench cell's folder ({CELL_HELP})"
    )
    parser.add_argument(
        "--watch",
        type=float,
        default=None,
        metavar="SECONDS",
        help="re-write the page every SECONDS until the run has finished",
    )


def run(args: argparse.Namespace) -> int:
    from aiscientist.task import TaskError
    from aiscientist.viewer import load_run, write_page

    if args.watch is not None and args.watch <= 0:
        raise TaskError("--watch", "SECONDS", "must be positive")
    path = write_page(args.run_dir)
    console.print(str(path), highlight=False, soft_wrap=True)
    while args.watch is not None and load_run(args.run_dir).running:
        time.sleep(args.watch)
        write_page(args.run_dir)
    return 0
