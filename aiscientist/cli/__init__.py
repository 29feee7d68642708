"""The command line: `main()` dispatches to one module per subcommand (see `main.COMMANDS`)."""

from aiscientist.cli.app import main

__all__ = ["main"]
