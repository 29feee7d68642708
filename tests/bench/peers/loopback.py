"""A deterministic OpenAI-compatible chat server on a real loopback socket: it answers
each request with the next scripted reply and keeps the requests it got."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from bench.peers.serve import LoopbackServer

ToolCall = dict[str, Any]  # {"name": ..., "arguments": {...}}: answered as a native tool call
Reply = str | ToolCall | Callable[[dict[str, Any]], "str | ToolCall"]


class ScriptedServer(LoopbackServer):
    def __init__(self, replies: list[Reply], fallback: Reply = "I am done."):
        self.replies, self.fallback = list(replies), fallback
        self.requests: list[dict[str, Any]] = []
        self.keys: list[str | None] = []  # each request's Authorization header
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self.serve(self._handler())

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    def next_reply(self, request: dict[str, Any]) -> str | ToolCall:
        with self._lock:
            self.requests.append(request)
            reply = self.replies.pop(0) if self.replies else self.fallback
        return reply(request) if callable(reply) else reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.keys.append(self.headers.get("Authorization"))
                try:
                    status, answer = 200, completion(request.get("model", "scripted"), server.next_reply(request))
                except Exception as err:  # a script that does not fit the request: the client fails, not retries
                    status, answer = 400, {"error": {"message": f"scripted server: {err!r}", "type": "invalid_request"}}
                    server.errors.append(repr(err))
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler


def completion(model: str, content: str | ToolCall) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if isinstance(content, dict):
        call = {
            "id": "call_0",
            "type": "function",
            "function": {**content, "arguments": json.dumps(content["arguments"])},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if message["content"] is None else "stop"}
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }
