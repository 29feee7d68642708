"""One real MLflow tracking server (loopback, SQLite backend) for the tracking tests, started once per
test session (per xdist worker that runs them) and stopped at its end."""

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
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory) -> Iterator[str]:
    if not os.environ.get("CI"):  # CI installs the extras (scripts/setup.sh): there a missing one fails
        pytest.importorskip("mlflow", reason="the mlflow extra is not installed (pip install 'aiscientist[mlflow]')")
    server, uri = start_server(tmp_path_factory.mktemp("mlflow"))
    yield uri
    stop_server(server)
