"""`aiscientist guide RUN "text"`: add a note the run reads at its next decision (`workspace.guidance`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from aiscientist.util.console import make_console

console = make_console()

HELP = "add a guidance note to a run (running, or stopped: it reads it on --resume); `try NAME=VALUE` names a change"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="the run folder (or a bench cell's folder)")
    parser.add_argument("text", nargs="?", help="the note (quote it)")
    parser.add_argument("--file", type=Path, help="read the note from this file instead")


def run(args: argparse.Namespace) -> int:
    from aiscientist.records.cell import run_folder
    from aiscientist.task import TaskError
    from aiscientist.workspace.guidance import GuidanceError, add_note

    if (args.text is None) == (args.file is None):
        raise TaskError("guide", "text", "give the note as TEXT or --file PATH (one of them)")
    try:
        text = args.file.read_text(errors="replace") if args.file else args.text
    except OSError as err:
        raise TaskError(args.file, "--file", f"cannot read it: {err.strerror}") from None
    folder = run_folder(args.run_dir)
    if folder is None:
        raise TaskError(args.run_dir, "run_dir", "not a run folder")
    try:
        note = add_note(folder, text)
    except GuidanceError as err:
        raise TaskError(args.run_dir, "note", str(err)) from None
    console.print(f"note {note.id} added to {folder} at {note.ts}", highlight=False, soft_wrap=True)
    return 0
