"""`python -m aiscientist <command>`: one program, one module per subcommand."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
from importlib.metadata import entry_points
from pathlib import Path

from aiscientist.llm.types import ReplayMiss
from aiscientist.task import TaskError
from aiscientist.util.console import log_handler, make_console
from aiscientist.util.registry import Registry

# name -> the module holding its HELP, add_arguments(parser) and run(args): aiscientist's own here,
# other installed packages' from their entry points in the PLUGINS group (pyproject.toml)
COMMANDS: Registry[str] = Registry("command")
for _name in ("solve", "baseline", "guide", "verify", "show", "sandbox", "task", "model"):
    COMMANDS.register(_name, f"aiscientist.cli.{_name}")
PLUGINS = "aiscientist.commands"


def installed_commands() -> Registry[str]:
    """The own commands and every installed package's (its `[project.entry-points."aiscientist.commands"]`)."""
    for point in entry_points(group=PLUGINS):
        COMMANDS.register(point.name, point.value)
    return COMMANDS


# errors are never hard-wrapped: a path or command in them stays copyable when stderr is a pipe
err_console = make_console(stderr=True, soft_wrap=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aiscientist", description="Autonomous ML research engineering and its benchmark."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--record", metavar="DIR", help="store every model request and response in DIR")
    parser.add_argument(
        "--replay", metavar="DIR", help="answer model requests from a recording in DIR (a miss is an error)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = installed_commands()
    for name in commands:
        module_name = commands.get(name)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if not module_name.startswith(str(err.name)):
                raise
            missing = sub.add_parser(name, help=f"{module_name} (not available in this build)")
            missing.set_defaults(handler=lambda args, name=name: _unavailable(name))
            continue
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(handler=module.run)
    return parser


def _unavailable(name: str) -> int:
    err_console.print(f"[red]error:[/red] the {name!r} command is not available in this build")
    return 2


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[log_handler()])
    for flag, env in ((args.record, "AISCIENTIST_LLM_RECORD"), (args.replay, "AISCIENTIST_LLM_REPLAY")):
        if flag:
            os.environ[env] = str(Path(flag).resolve())  # read by aiscientist.llm.load_llm_config
    try:
        return int(args.handler(args) or 0)
    except (TaskError, ReplayMiss) as err:
        err_console.print(f"[red]error:[/red] {err}")
        return 2 if isinstance(err, TaskError) else 1
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/yellow]")
        return 130
