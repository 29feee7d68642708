"""`aiscientist verify RUN_DIR`: exit 0 when the run folder is intact, 1 when tampered."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from aiscientist.records.paths import LOGS, RunPaths
from aiscientist.util.console import make_console

console = make_console()

HELP = "check a run folder's logs and protected files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run folder made by solve, baseline or bench")


def run(args: argparse.Namespace) -> int:
    from aiscientist.task import TaskError
    from aiscientist.workspace.verify import verify_run

    if not RunPaths(args.run_dir).logs.is_dir():
        raise TaskError(args.run_dir, "run_dir", f"not a run folder (no {LOGS}/)")
    report = verify_run(args.run_dir)
    # notes and problems quote names from the folder: printed as text, never read as markup
    for note in report.tamper_events:
        console.print(Text.assemble(("recorded:", "yellow"), " ", note), highlight=False, soft_wrap=True)
    if report.clean:
        console.print(
            f"[green]clean[/green]: {report.events} events, {report.log_appends} log appends, "
            f"{report.protected_files} protected files intact",
            highlight=False,
            soft_wrap=True,
        )
        return 0
    for problem in report.problems:
        console.print(Text.assemble(("TAMPERED", "red"), " ", str(problem)), highlight=False, soft_wrap=True)
    return 1
