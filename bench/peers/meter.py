"""The host's relay in front of an OpenAI-compatible endpoint, on a Unix socket the peer's
sandbox sees: the peer's own client talks to it as if it were the endpoint, every answer's
`usage` becomes a record in the run's `logs/llm_calls.jsonl` (a peer's steps are charged
with its tokens like any other agent's), and the endpoint's key is added here, so no key
enters the sandbox. A peer that hangs up (its own client's timeout) takes its request with it:
the relay closes the endpoint's connection too, so a one-at-a-time server does not go on
generating, or queueing, answers nobody reads.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

from aiscientist.llm import BudgetLimits
from aiscientist.llm.budget import tracker_for_run
from bench.peers.serve import LoopbackServer

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}
KEY_HEADERS = {"authorization", "api-key", "x-api-key"}  # whatever the peer sent is replaced by the run's key
ANSWER_TIMEOUT_S = 3600.0  # the longest the relay waits for the endpoint's answer


class Meter(LoopbackServer):
    def __init__(self, upstream: str, run_dir: Path, role: str, unix: Path, key: str | None = None):
        self.upstream, self.run_dir, self.role, self.key = upstream.rstrip("/"), run_dir, role, key
        self.serve(_handler(self), unix)

    def note(self, request: bytes, answer: bytes, seconds: float) -> None:
        try:
            body, sent = json.loads(answer), json.loads(request or b"{}")
        except ValueError:
            return
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            return
        record = {
            "role": self.role,
            "model": sent.get("model"),
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
            "cost": 0.0,
            "latency_s": round(seconds, 3),
            "outcome": "ok",
        }
        tracker_for_run(self.run_dir, BudgetLimits()).record(record)


def _connect(upstream: str) -> tuple[http.client.HTTPConnection, str]:
    """A connection to the endpoint and the path prefix of its URL."""
    url = urlsplit(upstream)
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    return kind(url.netloc, timeout=ANSWER_TIMEOUT_S), url.path


def _hung_up(peer: socket.socket, endpoint: socket.socket) -> bool:
    """Wait for the endpoint's answer; True when the peer closes its connection first."""
    watched = [peer, endpoint]
    while True:
        readable, _, _ = select.select(watched, [], [], ANSWER_TIMEOUT_S)
        if not readable:
            raise TimeoutError(f"no answer within {ANSWER_TIMEOUT_S:g} s")
        if endpoint in readable:
            return False
        try:
            if peer.recv(1, socket.MSG_PEEK) == b"":
                return True
        except OSError:
            return True
        watched = [endpoint]  # the peer sent more (a next request): only the answer matters now


def _handler(meter: Meter) -> type[BaseHTTPRequestHandler]:
    class MeterHandler(BaseHTTPRequestHandler):
        def _relay(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            dropped = HOP_HEADERS | KEY_HEADERS
            headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
            if meter.key:
                headers["Authorization"] = f"Bearer {meter.key}"
            started = time.monotonic()
            endpoint, prefix = _connect(meter.upstream)
            try:
                endpoint.request(self.command, prefix + self.path, body=data or None, headers=headers)
                if endpoint.sock is not None and _hung_up(self.connection, endpoint.sock):
                    return
                answer = endpoint.getresponse()
                status, body, kind = answer.status, answer.read(), answer.getheader("Content-Type", "")
            except (OSError, http.client.HTTPException) as err:
                status, kind = 502, "application/json"
                body = json.dumps({"error": {"message": f"model endpoint {meter.upstream}: {err}"}}).encode()
            finally:
                endpoint.close()
            if status == 200:
                meter.note(data, body, time.monotonic() - started)
            self.send_response(status)
            self.send_header("Content-Type", kind or "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET = _relay  # noqa: N815

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return MeterHandler
