"""The command line: `main()` dispatches to one module per subcommand (`app.COMMANDS`, and the
commands installed packages declare in the `aiscientist.commands` entry-point group)."""

from aiscientist.cli.app import main

__all__ = ["main"]
