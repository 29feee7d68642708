"""The host's model gateway in front of an OpenAI-compatible endpoint, on a Unix socket the peer's
sandbox sees. The peer's own client talks to it as if it were the endpoint; the host decides:

- only `POST /chat/completions` passes (any other method or path: 404/405, nothing forwarded);
- the model is pinned: whatever model the request names is rewritten to the grid's (a peer cannot
  pick a dearer one; the name it asked for is kept in the record when it differed);
- `n` is 1 and `max_tokens` at most the models file's cap (`DEFAULT_MAX_TOKENS` without one);
- a request body over `MAX_REQUEST_BYTES` is refused before it is read, an answer over
  `MAX_ANSWER_BYTES` is cut off;
- every call is priced (litellm's price through the run's client, 0 for a local model), metered
  (a streamed answer too: usage asked for in its last chunk, else counted from its text) and recorded
  in the run's `logs/llm_calls.jsonl` like our own calls, under the run's budget: a call the run's
  calls, tokens or cost would exceed is refused (403, not retried by OpenAI clients) and `refused`
  says why, so the cell can say why its peer stopped.

The endpoint's key is added here, so no key enters the sandbox. A peer that hangs up (its own
client's timeout) takes its request with it: the gateway closes the endpoint's connection too, so a
one-at-a-time server does not go on generating, or queueing, answers nobody reads.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiscientist.llm.client import LLMClient
from aiscientist.llm.types import BudgetExhausted
from bench.peers.serve import LoopbackServer

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}
KEY_HEADERS = {"authorization", "api-key", "x-api-key"}  # whatever the peer sent is replaced by the run's key
ANSWER_TIMEOUT_S = 3600.0  # the longest the gateway waits for the endpoint's answer
ROUTE = "/chat/completions"
MAX_REQUEST_BYTES = 8 << 20
MAX_ANSWER_BYTES = 16 << 20
DEFAULT_MAX_TOKENS = 8192
OPENAI_PREFIXES = ("openai/", "hosted_vllm/")  # litellm sends the rest of such a name to the endpoint


def endpoint_model(name: str) -> str:
    """The model's name at an OpenAI-compatible endpoint."""
    for prefix in OPENAI_PREFIXES:
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name


class Refusal(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Gateway(LoopbackServer):
    def __init__(self, upstream: str, client: LLMClient, role: str, unix: Path, key: str | None = None):
        self.upstream, self.client, self.role, self.key = upstream.rstrip("/"), client, role, key
        self.pinned = endpoint_model(client.model.removeprefix("local/"))
        self.max_tokens = client.config.max_tokens or DEFAULT_MAX_TOKENS
        self.refused: str | None = None  # the last budget refusal, for the cell's stop reason
        self.serve(_handler(self), unix)

    def shape(self, method: str, path: str, length: int, read: Callable[[int], bytes]) -> bytes:
        """The body of a chat completion of a readable size; anything else refused (a body over the
        limit before it is read; a smaller one read first, so the peer's client gets the answer)."""
        if length > MAX_REQUEST_BYTES:
            raise Refusal(413, f"request body of {length:,} bytes is over the gateway's {MAX_REQUEST_BYTES:,}")
        data = read(length)
        if urlsplit(path).path != ROUTE:
            raise Refusal(404, f"the model gateway answers {ROUTE} only, not {path[:200]!r}")
        if method != "POST":
            raise Refusal(405, f"the model gateway answers POST {ROUTE} only, not {method}")
        return data

    def request(self, data: bytes) -> tuple[dict[str, Any], object]:
        """The request as the endpoint gets it (the pinned model, one choice, a capped answer) and the
        model it named."""
        try:
            body = json.loads(data)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise Refusal(400, "a chat completion request is a JSON object with a messages list")
        asked = body.get("max_completion_tokens", body.get("max_tokens"))
        cap = min(asked, self.max_tokens) if isinstance(asked, int) and asked > 0 else self.max_tokens
        body.pop("max_completion_tokens", None)
        asked = body.get("model")
        body.update(model=self.pinned, n=1, max_tokens=cap)
        if body.get("stream"):
            body["stream_options"] = {"include_usage": True}
        return body, asked

    def reserve(self, body: dict[str, Any], asked_model: object) -> Any:
        """Room in the run's budget for this call (its prompt and its whole answer), or a refusal."""
        prompt = self.client.counter.text(json.dumps(body["messages"], ensure_ascii=False))
        try:
            return self.client.budget.reserve(
                prompt + body["max_tokens"], self.client.price(prompt, body["max_tokens"])
            )
        except BudgetExhausted as err:
            self.refused = str(err)
            self.record({"outcome": "budget_exhausted", "error": str(err), "sent": False}, asked_model)
            raise Refusal(403, f"the run's model budget is spent: {err}") from err

    def record(self, fields: dict[str, Any], asked_model: object, reservation: Any = None) -> None:
        prompt, completion = fields.pop("prompt_tokens", 0), fields.pop("completion_tokens", 0)
        record = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "role": self.role,
            "model": self.client.model,
            "via": "gateway",
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cost": self.client.price(prompt, completion) if prompt or completion else 0.0,
            **fields,
        }
        if asked_model != self.pinned:
            record["asked_model"] = str(asked_model)[:200]
        self.client.budget.record(record, reservation)

    def usage(self, body: dict[str, Any], answer: dict[str, Any] | None, text: str) -> dict[str, int]:
        """The call's tokens: the endpoint's `usage`, else counted (prompt from the request, answer from its text)."""
        usage = (answer or {}).get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            return {
                "prompt_tokens": usage["prompt_tokens"],
                "completion_tokens": int(usage.get("completion_tokens") or 0),
            }
        prompt = self.client.counter.text(json.dumps(body["messages"], ensure_ascii=False))
        return {"prompt_tokens": prompt, "completion_tokens": self.client.counter.text(text)}


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


def _text_of(chunk: dict[str, Any]) -> str:
    """The answer text one completion (or one streamed chunk) carries."""
    parts = []
    for choice in chunk.get("choices") or []:
        if isinstance(choice, dict):
            for key in ("message", "delta"):
                part = choice.get(key)
                if isinstance(part, dict):
                    parts += [str(part.get("content") or ""), json.dumps(part.get("tool_calls") or "")]
    return "".join(parts)


def _handler(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    class GatewayHandler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            try:
                length = int(self.headers.get("Content-Length", 0) or 0)
                data = gateway.shape(self.command, self.path, length, self.rfile.read)
                body, asked = gateway.request(data)
                reservation = gateway.reserve(body, asked)
            except Refusal as refusal:
                self._send(refusal.status, "application/json", _error(str(refusal)))
                return
            started = time.monotonic()
            endpoint, prefix = _connect(gateway.upstream)
            outcome: dict[str, Any] = {"outcome": "error", "error": "the peer hung up"}
            try:
                outcome = self._relay(endpoint, prefix, body)
            except (OSError, http.client.HTTPException) as err:
                outcome = {"outcome": "error", "error": f"model endpoint {gateway.upstream}: {err}"}
                self._send(502, "application/json", _error(outcome["error"]))
            finally:
                endpoint.close()
                gateway.record({**outcome, "latency_s": round(time.monotonic() - started, 3)}, asked, reservation)

        def _relay(self, endpoint: http.client.HTTPConnection, prefix: str, body: dict[str, Any]) -> dict[str, Any]:
            dropped = HOP_HEADERS | KEY_HEADERS
            headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
            headers["Content-Type"] = "application/json"
            if gateway.key:
                headers["Authorization"] = f"Bearer {gateway.key}"
            endpoint.request("POST", prefix + ROUTE, body=json.dumps(body).encode(), headers=headers)
            if endpoint.sock is not None and _hung_up(self.connection, endpoint.sock):
                return {"outcome": "error", "error": "the peer hung up before the answer"}
            answer = endpoint.getresponse()
            kind = answer.getheader("Content-Type", "") or "application/json"
            if answer.status == 200 and body.get("stream"):
                return self._stream(answer, kind, body)
            data = answer.read(MAX_ANSWER_BYTES)
            self._send(answer.status, kind, data)
            if answer.status != 200:
                return {"outcome": "error", "error": f"endpoint status {answer.status}"}
            try:
                parsed = json.loads(data)
            except ValueError:
                parsed = None
            parsed = parsed if isinstance(parsed, dict) else None
            return {"outcome": "ok", **gateway.usage(body, parsed, _text_of(parsed or {}))}

        def _stream(self, answer: http.client.HTTPResponse, kind: str, body: dict[str, Any]) -> dict[str, Any]:
            """Relay server-sent events as they come, reading each for its text and a final `usage`."""
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            text, usage, size = [], None, 0
            while size < MAX_ANSWER_BYTES and (line := answer.readline(1 << 20)):
                size += len(line)
                self.wfile.write(line)
                payload = line.strip().removeprefix(b"data:").strip()
                if not line.startswith(b"data:") or payload == b"[DONE]":
                    continue
                try:
                    chunk = json.loads(payload)
                except ValueError:
                    continue
                if isinstance(chunk, dict):
                    text.append(_text_of(chunk))
                    usage = chunk if isinstance(chunk.get("usage"), dict) else usage
            self.wfile.flush()
            return {"outcome": "ok", "stream": True, **gateway.usage(body, usage, "".join(text))}

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve  # noqa: N815

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return GatewayHandler


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "gateway_refused"}}).encode()
