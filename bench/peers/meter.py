"""The host's relay in front of an OpenAI-compatible endpoint, on a Unix socket the peer's
sandbox sees: the peer's own client talks to it as if it were the endpoint, every answer's
`usage` becomes a record in the run's `logs/llm_calls.jsonl` (a peer's steps are charged
with its tokens like any other agent's), and the endpoint's key is added here, so no key
enters the sandbox.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from aiscientist.llm import BudgetLimits
from aiscientist.llm.budget import tracker_for_run
from bench.peers.serve import LoopbackServer

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}
KEY_HEADERS = {"authorization", "api-key", "x-api-key"}  # whatever the peer sent is replaced by the run's key


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


def _handler(meter: Meter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _relay(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            dropped = HOP_HEADERS | KEY_HEADERS
            headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
            if meter.key:
                headers["Authorization"] = f"Bearer {meter.key}"
            request = urllib.request.Request(meter.upstream + self.path, data=data or None, method=self.command)
            for key, value in headers.items():
                request.add_header(key, value)
            started = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=3600) as answer:
                    status, body, kind = answer.status, answer.read(), answer.headers.get("Content-Type", "")
            except urllib.error.HTTPError as err:
                status, body, kind = err.code, err.read(), err.headers.get("Content-Type", "")
            except (urllib.error.URLError, OSError) as err:
                status, kind = 502, "application/json"
                body = json.dumps({"error": {"message": f"model endpoint {meter.upstream}: {err}"}}).encode()
            if status == 200:
                meter.note(data, body, time.monotonic() - started)
            self.send_response(status)
            self.send_header("Content-Type", kind or "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET = _relay  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler
