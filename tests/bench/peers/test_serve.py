"""The peers' loopback and Unix-socket servers: a client that hangs up before its answer
(a peer ended at its budget) leaves no traceback on the console; other errors still show."""

from __future__ import annotations

import socket
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from bench.peers.serve import LoopbackServer


class SlowAnswer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(0.5)  # the client is gone by now
        self.send_response(200)
        self.end_headers()
        for _ in range(64):
            self.wfile.write(b"x" * 65536)

    def log_message(self, *args: object) -> None:
        pass


class Broken(SlowAnswer):
    def do_GET(self) -> None:
        raise ValueError("a real fault")


def hang_up(server: LoopbackServer) -> None:
    if server.socket_path is not None:
        client = socket.socket(socket.AF_UNIX)
        client.connect(str(server.socket_path))
    else:
        client = socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    client.close()  # a reset, before the answer
    time.sleep(1.5)


@pytest.mark.parametrize("unix", [False, True])
def test_a_client_hanging_up_leaves_no_traceback(tmp_path: Path, capfd: pytest.CaptureFixture[str], unix: bool):
    server = LoopbackServer()
    server.serve(SlowAnswer, tmp_path / "s.sock" if unix else None)
    with server:
        hang_up(server)
    assert "Traceback" not in capfd.readouterr().err
    broken = LoopbackServer()
    broken.serve(Broken, tmp_path / "b.sock" if unix else None)
    with broken:
        hang_up(broken)
    assert "ValueError: a real fault" in capfd.readouterr().err
