"""`python -m aiscientist bench peers install [NAME...]` and `bench peers list`."""

from __future__ import annotations

import argparse

from aiscientist.util.console import make_console
from bench.peers.specs import PEERS, PeerEnvError, cache_dir, install, installed_version, spec

console = make_console(stderr=True, soft_wrap=True)


def add_parser(sub: argparse._SubParsersAction) -> None:
    peers = sub.add_parser("peers", help="install or list the peers' released code (each in its own virtualenv)")
    action = peers.add_subparsers(dest="peers_command", required=True, metavar="{install,list}")
    setup = action.add_parser("install", help=f"install peers into {cache_dir()} (default: all)")
    setup.add_argument("names", nargs="*", metavar="NAME", help=f"of {', '.join(PEERS)} (with or without peer-)")
    setup.add_argument("--force", action="store_true", help="rebuild the environment even if it is installed")
    action.add_parser("list", help="each peer's pinned package and whether it is installed")


def run(args: argparse.Namespace) -> int:
    if args.peers_command == "list":
        for peer in PEERS.values():
            found = installed_version(peer)
            state = "installed" if found == peer.version else "not installed" if found is None else f"has {found}"
            print(f"peer-{peer.name}\t{peer.requirement}\t{state}\t{cache_dir() / peer.name}")
        return 0
    try:
        for name in [spec(n).name for n in args.names] or list(PEERS):
            install(name, progress=lambda line: console.print(line), force=args.force)
    except PeerEnvError as err:
        console.print(f"[red]error:[/red] {err}")
        return 2
    return 0
