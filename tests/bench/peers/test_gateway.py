"""The model gateway between a sandboxed peer and its endpoint (a real loopback endpoint, a real Unix
socket): chat completions only, the model pinned, `n` and `max_tokens` capped, every call priced and
recorded (streamed ones too) under the run's budget, the run's key added; a peer that hangs up takes
its request off the endpoint."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from aiscientist.llm import BudgetLimits, LLMClient
from aiscientist.llm.budget import read_records, tracker_for_run
from aiscientist.llm.config import LLMConfig
from aiscientist.records.paths import RunPaths
from bench.peers.gateway import MAX_REQUEST_BYTES, Gateway
from bench.peers.serve import LoopbackServer
from tests.bench.peers.loopback import ScriptedServer

PRICED = "gpt-4o-mini"  # in litellm's cost map


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(self.path))


def client(run: Path, model: str = PRICED, priced: bool = True, max_tokens: int = 64, **limits) -> LLMClient:
    config = LLMConfig(model=model, max_tokens=max_tokens)
    return LLMClient(config, None, tracker_for_run(run, BudgetLimits(**limits)), role="peer", priced=priced)


def ask(path: Path, body: dict | None = None, method: str = "POST", route: str = "/chat/completions") -> tuple:
    connection = UnixHTTPConnection(path)
    body = body or {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    connection.request(method, route, json.dumps(body), {"Authorization": "Bearer sk-peer"})
    answer = connection.getresponse()
    data = answer.read()
    try:
        return answer.status, json.loads(data)
    except ValueError:
        return answer.status, data


def chat(path: Path) -> tuple[int, dict]:
    return ask(path)


def records(run: Path) -> list[dict]:
    return read_records(RunPaths(run).llm_calls)


def test_a_call_is_pinned_capped_priced_and_relayed_with_the_runs_key(tmp_path: Path):
    with ScriptedServer([], fallback="an answer") as server:
        with Gateway(server.api_base, client(tmp_path), "peer-aide", tmp_path / "model.sock", key="sk-run"):
            asked = {
                "model": "gpt-4.5-preview",
                "n": 5,
                "max_tokens": 100000,
                "messages": [{"role": "user", "content": "hi"}],
            }
            status, body = ask(tmp_path / "model.sock", asked)
        keys, [sent] = list(server.keys), server.requests
    assert status == 200 and body["choices"][0]["message"]["content"] == "an answer"
    assert keys == ["Bearer sk-run"]  # the peer's own header never reaches the endpoint
    assert sent["model"] == PRICED and sent["n"] == 1 and sent["max_tokens"] == 64
    [record] = records(tmp_path)
    assert record["role"] == "peer-aide" and record["via"] == "gateway" and record["outcome"] == "ok"
    assert (record["prompt_tokens"], record["completion_tokens"]) == (100, 20)  # the endpoint's usage
    assert record["cost"] > 0 and record["asked_model"] == "gpt-4.5-preview"


def test_a_local_model_costs_nothing(tmp_path: Path):
    with ScriptedServer([], fallback="an answer") as server:
        run = client(tmp_path, model="local/qwen", priced=False)
        with Gateway(server.api_base, run, "peer-aide", tmp_path / "model.sock"):
            assert chat(tmp_path / "model.sock")[0] == 200
        assert server.requests[0]["model"] == "qwen"
    [record] = records(tmp_path)
    assert record["cost"] == 0 and record["prompt_tokens"] == 100


@pytest.mark.parametrize(
    ("method", "route", "status"),
    [
        ("GET", "/models", 404),
        ("POST", "/embeddings", 404),
        ("POST", "/v1/files", 404),
        ("GET", "/chat/completions", 405),
        ("DELETE", "/chat/completions", 405),
        ("POST", "/chat/completions/../../admin", 404),
    ],
)
def test_anything_but_a_chat_completion_is_refused_unforwarded(tmp_path: Path, method: str, route: str, status: int):
    with ScriptedServer([], fallback="an answer") as server:
        with Gateway(server.api_base, client(tmp_path), "peer-aide", tmp_path / "model.sock"):
            got, body = ask(tmp_path / "model.sock", method=method, route=route)
        assert not server.requests
    assert got == status and "chat/completions only" in body["error"]["message"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(tmp_path: Path):
    with ScriptedServer([], fallback="an answer") as server:
        with Gateway(server.api_base, client(tmp_path), "peer-aide", tmp_path / "model.sock"):
            peer = socket.socket(socket.AF_UNIX)
            peer.connect(str(tmp_path / "model.sock"))
            head = f"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_REQUEST_BYTES + 1}\r\n\r\n"
            peer.sendall(head.encode())  # and never the body: the answer must not wait for it
            peer.settimeout(10)
            answer = b"".join(iter(lambda: peer.recv(4096), b"")).decode()
            peer.close()
        assert not server.requests
    assert answer.startswith("HTTP/1.0 413") and "over the gateway" in answer


def test_the_runs_call_budget_is_enforced_on_the_host(tmp_path: Path):
    with ScriptedServer([], fallback="an answer") as server:
        gateway = Gateway(server.api_base, client(tmp_path, calls=2), "peer-aide", tmp_path / "model.sock")
        with gateway:
            answers = [chat(tmp_path / "model.sock") for _ in range(3)]
        assert len(server.requests) == 2
    assert [status for status, _ in answers] == [200, 200, 403]
    assert "the run's model budget is spent" in answers[2][1]["error"]["message"] and "calls" in gateway.refused
    assert sorted(r["outcome"] for r in records(tmp_path)) == ["budget_exhausted", "ok", "ok"]


def test_the_runs_cost_budget_counts_the_whole_capped_answer(tmp_path: Path):
    with ScriptedServer([], fallback="an answer") as server:
        run = client(tmp_path, max_tokens=4000, cost_usd=0.0001)
        with Gateway(server.api_base, run, "peer-aide", tmp_path / "model.sock"):
            status, body = chat(tmp_path / "model.sock")
        assert not server.requests
    assert status == 403 and "cost_usd" in body["error"]["message"]


class StreamingEndpoint(LoopbackServer):
    """An endpoint answering every chat completion as server-sent events: three text chunks, then
    (when asked for with stream_options.include_usage, and `usage` is on) a usage chunk."""

    def __init__(self, usage: bool):
        self.requests: list[dict] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append(request)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for word in ("one ", "two ", "three"):
                    chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                if usage and request.get("stream_options", {}).get("include_usage"):
                    chunk = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.serve(Handler)


@pytest.mark.parametrize("usage", [True, False], ids=["usage-chunk", "counted"])
def test_a_streamed_answer_is_relayed_and_metered(tmp_path: Path, usage: bool):
    with StreamingEndpoint(usage) as endpoint:
        with Gateway(f"{endpoint.url}/v1", client(tmp_path), "peer-aide", tmp_path / "model.sock"):
            stream = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "count to three"}]}
            status, data = ask(tmp_path / "model.sock", stream)
    assert status == 200 and data.count(b"data: ") == 4 + usage and b"three" in data
    assert endpoint.requests[0]["stream_options"] == {"include_usage": True}
    [record] = records(tmp_path)
    assert record["stream"] and record["outcome"] == "ok" and record["cost"] > 0
    if usage:
        assert (record["prompt_tokens"], record["completion_tokens"]) == (7, 3)
    else:  # no usage from the endpoint: the answer's text is counted, and the prompt
        assert record["completion_tokens"] >= 3 and record["prompt_tokens"] > 0


def test_an_endpoint_that_is_down_is_a_502_naming_it(tmp_path: Path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    with Gateway(base, client(tmp_path), "peer-aide", tmp_path / "model.sock"):
        status, body = chat(tmp_path / "model.sock")
    assert status == 502 and f"model endpoint {base}" in body["error"]["message"]
    [record] = records(tmp_path)
    assert record["outcome"] == "error" and record["cost"] == 0


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
    with Gateway(base, client(tmp_path), "peer-aide", tmp_path / "model.sock"):
        peer = socket.socket(socket.AF_UNIX)
        peer.connect(str(tmp_path / "model.sock"))
        body = json.dumps({"messages": []}).encode()
        peer.sendall(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        time.sleep(0.5)
        peer.close()  # the peer's own timeout
        waiter.join(timeout=25)
    endpoint.close()
    assert closed_after and closed_after[0] < 5, closed_after


def test_an_endpoint_that_never_answers_is_a_502_after_the_gateways_limit(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("bench.peers.gateway.ANSWER_TIMEOUT_S", 1.0)
    endpoint = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel's backlog), never answers
    base = f"http://127.0.0.1:{endpoint.getsockname()[1]}/v1"
    with Gateway(base, client(tmp_path), "peer-aide", tmp_path / "model.sock"):
        status, body = chat(tmp_path / "model.sock")
    endpoint.close()
    assert status == 502 and "no answer within 1 s" in body["error"]["message"]
