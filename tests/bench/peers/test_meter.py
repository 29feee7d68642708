"""The token meter between a sandboxed peer and its model endpoint: answers relayed with the
run's key and counted; a peer that hangs up takes its request off the endpoint."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from pathlib import Path

from aiscientist.llm.budget import read_records
from aiscientist.records.paths import RunPaths
from bench.peers.meter import Meter
from tests.bench.peers.loopback import ScriptedServer


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(self.path))


def chat(path: Path) -> tuple[int, dict]:
    connection = UnixHTTPConnection(path)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    connection.request("POST", "/chat/completions", json.dumps(body), {"Authorization": "Bearer sk-peer"})
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())


def test_answers_are_relayed_with_the_runs_key_and_counted(tmp_path: Path):
    with ScriptedServer([], fallback="an answer") as server:
        with Meter(server.api_base, tmp_path, "peer-aide", tmp_path / "model.sock", key="sk-run"):
            status, body = chat(tmp_path / "model.sock")
        keys = list(server.keys)
    assert status == 200 and body["choices"][0]["message"]["content"] == "an answer"
    assert keys == ["Bearer sk-run"]  # the peer's own header never reaches the endpoint
    [record] = read_records(RunPaths(tmp_path).llm_calls)
    assert record["role"] == "peer-aide" and record["prompt_tokens"] > 0


def test_an_endpoint_that_is_down_is_a_502_naming_it(tmp_path: Path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    with Meter(base, tmp_path, "peer-aide", tmp_path / "model.sock"):
        status, body = chat(tmp_path / "model.sock")
    assert status == 502 and f"model endpoint {base}" in body["error"]["message"]


def test_a_peer_hanging_up_closes_its_request_at_the_endpoint(tmp_path: Path):
    """llama.cpp's server skips a request whose client is gone; a relay that kept the request
    open made a one-at-a-time server queue every abandoned request of a peer's retries."""
    endpoint = socket.create_server(("127.0.0.1", 0))
    closed_after: list[float] = []

    def never_answer() -> None:
        connection, _ = endpoint.accept()
        connection.recv(65536)
        started = time.monotonic()
        connection.settimeout(20)
        while connection.recv(65536):
            pass
        closed_after.append(time.monotonic() - started)

    waiter = threading.Thread(target=never_answer, daemon=True)
    waiter.start()
    base = f"http://127.0.0.1:{endpoint.getsockname()[1]}/v1"
    with Meter(base, tmp_path, "peer-aide", tmp_path / "model.sock"):
        peer = socket.socket(socket.AF_UNIX)
        peer.connect(str(tmp_path / "model.sock"))
        peer.sendall(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        time.sleep(0.5)
        peer.close()  # the peer's own timeout
        waiter.join(timeout=25)
    endpoint.close()
    assert closed_after and closed_after[0] < 5, closed_after


def test_an_endpoint_that_never_answers_is_a_502_after_the_relays_limit(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("bench.peers.meter.ANSWER_TIMEOUT_S", 1.0)
    endpoint = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel's backlog), never answers
    base = f"http://127.0.0.1:{endpoint.getsockname()[1]}/v1"
    with Meter(base, tmp_path, "peer-aide", tmp_path / "model.sock"):
        status, body = chat(tmp_path / "model.sock")
    endpoint.close()
    assert status == 502 and "no answer within 1 s" in body["error"]["message"]
