"""One real MLflow tracking server (loopback, SQLite backend) for the tracking tests, started once per
test session (per xdist worker that runs them) and killed at its end; a test that kills it
(test_tracking.py's last user) gets a new one for whoever asks next."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(folder: Path) -> tuple[subprocess.Popen, str]:
    """`mlflow server` on a free loopback port with a SQLite store in `folder`; (process, URI) once it answers."""
    port = _free_port()
    folder.mkdir(parents=True, exist_ok=True)
    mlflow = shutil.which("mlflow") or str(Path(sys.executable).with_name("mlflow"))
    command = [
        mlflow, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination", str(folder / "artifacts"),
    ]  # fmt: skip
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                if answer.status == 200:
                    return server, uri
        except OSError:
            time.sleep(0.3)
        if server.poll() is not None:
            break
    stop_server(server)
    pytest.fail(f"mlflow server did not start: {(folder / 'server.log').read_text()[-2000:]}")


def stop_server(server: subprocess.Popen) -> None:
    """Kill the server's process group (SIGTERM made it shut down gracefully: ~9 s)."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


class Servers:
    """The session's server, started on first use and again after a test stopped it."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.started = folder, 0
        self.server: subprocess.Popen | None = None
        self.address = ""

    def uri(self) -> str:
        if self.server is None or self.server.poll() is not None:
            self.started += 1
            self.server, self.address = start_server(self.folder / str(self.started))
        return self.address

    def stop(self) -> None:
        if self.server is not None:
            stop_server(self.server)


@pytest.fixture(scope="session")
def mlflow_servers(tmp_path_factory) -> Iterator[Servers]:
    if not os.environ.get("CI"):  # CI installs the extras (scripts/setup.sh): there a missing one fails
        pytest.importorskip("mlflow", reason="the mlflow extra is not installed (pip install 'aiscientist[mlflow]')")
    servers = Servers(tmp_path_factory.mktemp("mlflow"))
    yield servers
    servers.stop()


@pytest.fixture
def mlflow_server(mlflow_servers: Servers) -> str:
    """The URI of a running server (the session's)."""
    return mlflow_servers.uri()
