"""llama.cpp's OpenAI-compatible server (llama-cpp-python) on loopback, for local models.

It runs as `aiscientist.llm.local.serve`: llama-cpp-python's own server, its answers also counting
the cached prompt tokens and its streamed answers their usage.

`LocalServer` starts it on a GGUF, waits until `GET /v1/models` answers, and stops it.
`ensure_server` is what a client of a `local/` model calls: a server already answering
at the configured address is used as it is; otherwise one is started for the process
and stopped when the process exits. Every refusal (server package missing, port taken
by something else, wrong GGUF) is a ModelConfigError before any work starts.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from aiscientist.llm.local.gguf import resolve_gguf
from aiscientist.llm.types import ModelConfigError

DEFAULT_PORT = 8765
STARTUP_TIMEOUT_S = 300.0
# the server keeps the states of recent prompts in RAM and resumes from the one sharing the
# longest prefix: an orchestrator's next decision reuses its own prompt after a specialist's
# requests went between (with one cache slot only, a 1,600-token prompt took 230 s again, not 6 s).
# llama-cpp-python's LlamaRAMCache is one LRU over every role's states (keyed by prompt + answer,
# looked up by longest shared prefix), bounded by the llama.cpp state sizes only: a role's prefix
# stays while fewer than CACHE_BYTES of other states came after it (a 0.5B model's 4,000-token
# state is about 50 MB, so dozens). Our server keeps no logits copy in a state (`serve.lean_states`):
# llama-cpp-python's held n_batch x vocabulary floats each (~300 MB for Qwen) beyond the bound.
CACHE_BYTES = 2 << 30
# llama-cpp-python answers GET /v1/models only between completions: a port that is taken
# gets this long to answer before it counts as something else
BUSY_PROBE_S = 60.0
INSTALL_HINT = "pip install 'aiscientist[local-model]' (or run scripts/setup.sh with AISCIENTIST_LOCAL_MODEL=1)"


def answers(api_base: str, timeout_s: float = 2.0) -> bool:
    """True when an OpenAI-compatible server lists its models at `api_base`."""
    try:
        with urllib.request.urlopen(f"{api_base.rstrip('/')}/models", timeout=timeout_s) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def port_taken(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((host, port)) == 0


def loopback(api_base: str) -> tuple[str, int]:
    url = urlparse(api_base)
    if url.hostname not in ("127.0.0.1", "localhost") or url.port is None:
        raise ModelConfigError(f"a local model's api_base must be http://127.0.0.1:PORT/v1, got {api_base!r}")
    return "127.0.0.1", url.port


class LocalServer:
    """One llama.cpp server process serving `gguf` as `alias` at `http://host:port/v1`."""

    def __init__(self, gguf: Path, alias: str, port: int = DEFAULT_PORT, n_ctx: int = 8192, log: Path | None = None):
        self.gguf, self.alias, self.port, self.n_ctx = gguf, alias, port, n_ctx
        self.host = "127.0.0.1"
        self.api_base = f"http://{self.host}:{port}/v1"
        self.log = log or Path(tempfile.gettempdir()) / f"aiscientist-llama-{port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        threads = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
        return [
            sys.executable, "-m", "aiscientist.llm.local.serve", "--model", str(self.gguf), "--model_alias", self.alias,
            "--host", self.host, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
            "--n_threads", threads, "--n_threads_batch", threads, "--logits_all", "False",
            "--cache", "True", "--cache_type", "ram", "--cache_size", str(CACHE_BYTES),
        ]  # fmt: skip

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Start and wait until it answers; refuse a missing package or a taken port."""
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelConfigError(f"the local model server is not installed (no module llama_cpp): {INSTALL_HINT}")
        if port_taken(self.host, self.port):
            raise ModelConfigError(f"port {self.port} on {self.host} is already in use; choose another with --port")
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        deadline = time.monotonic() + timeout_s
        while not answers(self.api_base):
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace").strip().splitlines()[-3:]
                raise ModelConfigError(f"the local model server exited ({' | '.join(tail)}); log: {self.log}")
            if time.monotonic() > deadline:
                self.stop()
                raise ModelConfigError(f"the local model server did not answer within {timeout_s:g} s; log: {self.log}")
            time.sleep(0.25)

    def stop(self) -> None:
        """SIGINT, then SIGKILL after 10 s; the whole process group (uvicorn's workers too)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGINT, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
                process.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_started: dict[str, LocalServer] = {}
_answered: set[str] = set()  # servers seen answering in this process: busy later is not gone
_lock = threading.Lock()


def ensure_server(api_base: str, gguf: str, alias: str, n_ctx: int) -> None:
    """A server answering at `api_base`: the one there, or one started for this process."""
    with _lock:
        if api_base in _started or api_base in _answered:
            return
        host, port = loopback(api_base)
        if answers(api_base) or (port_taken(host, port) and answers(api_base, BUSY_PROBE_S)):
            _answered.add(api_base)
            return
        if port_taken(host, port):
            raise ModelConfigError(
                f"port {port} is in use by something that does not answer GET {api_base}/models within "
                f"{BUSY_PROBE_S:g} s; stop it or set another api_base port for the model"
            )
        server = LocalServer(resolve_gguf(gguf), alias, port, n_ctx)
        server.start()
        _started[api_base] = server
        atexit.register(server.stop)
