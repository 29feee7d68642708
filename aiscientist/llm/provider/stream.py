"""Streamed answers from a local OpenAI-compatible server (llama.cpp's), so that giving up stops it.

A request carries `stream: true` and `stream_options: {include_usage: true}`; the answer is read
event by event (server-sent events) and put together: the content, tool calls by index, the usage
from the chunk that carries it and llama.cpp's `timings`. A client that gives up closes the
connection: at the hard limit (`timeout_s` plus a grace) a timer shuts the socket down under the
read, and Ctrl-C or any error leaves through the `finally` that closes it. llama.cpp's server sees
the closed connection at its next token and stops generating; a non-streamed request would be
computed to its end for nobody, holding the one-at-a-time server from the next request.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

from aiscientist.llm.config import LLMConfig
from aiscientist.llm.provider.caching import stream_cache_read
from aiscientist.llm.provider.errors import (
    CONNECT_TIMEOUT_S,
    HARD_LIMIT_GRACE_S,
    RETRYABLE_STATUS,
    STATUS_WORDS,
    Transient,
    context_sizes,
    network_failure,
)
from aiscientist.llm.types import ContextOverflow, ModelError, RawToolCall, Reply

ERROR_CHARS = 2000


class BrokenStream(Exception):
    """The answer ended before the server's `[DONE]`."""


class StreamBackend:
    """`local/NAME`: chat completions streamed from the server at `config.api_base`, as `alias`."""

    def __init__(self, config: LLMConfig, alias: str):
        url = urlparse(config.api_base or "")
        if url.hostname is None or url.port is None:
            raise ValueError(f"a streamed backend needs http://HOST:PORT/..., got {config.api_base!r}")
        self.config, self.alias = config, alias
        self.host, self.port, self.path = url.hostname, url.port, url.path.rstrip("/") + "/chat/completions"

    def body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: list[str] | None) -> dict:
        cfg = self.config
        body: dict[str, Any] = {"model": self.alias, "messages": messages, "stream": True}
        body["stream_options"] = {"include_usage": True}
        optional = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens, "stop": stop, "tools": tools or None}
        return body | {k: v for k, v in optional.items() if v is not None}

    def send(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: list[str] | None = None) -> Reply:
        """One attempt; a stream that broke before anything came is asked once more without
        streaming, which states the server's error (llama.cpp's context overflow, for one)."""
        body = self.body(messages, tools, stop)
        try:
            return self.exchange(body)
        except BrokenStream as err:
            if err.args[0]:  # something came: the server failed while answering
                raise Transient(f"the server broke off its answer ({self.config.api_base}): {err.args[1]}") from err
            return self.exchange(body | {"stream": False, "stream_options": None})

    def exchange(self, body: dict[str, Any]) -> Reply:
        cfg = self.config
        limit_s = cfg.timeout_s + HARD_LIMIT_GRACE_S
        conn = http.client.HTTPConnection(self.host, self.port, timeout=min(cfg.timeout_s, CONNECT_TIMEOUT_S))
        expired = threading.Event()
        timer = threading.Timer(limit_s, lambda: (expired.set(), _shutdown(conn)))
        timer.daemon = True
        timer.start()
        try:
            conn.request("POST", self.path, json.dumps(body).encode(), {"Content-Type": "application/json"})
            if conn.sock is not None:
                conn.sock.settimeout(cfg.timeout_s)  # per read; the timer bounds the whole answer
            response = conn.getresponse()
            if response.status != 200:
                raise self.refused(response.status, response.read(ERROR_CHARS), response.getheader("Retry-After"))
            if not body["stream"]:
                return reply_of(json.loads(response.read()))
            return assemble(events(response))
        except (KeyError, IndexError, TypeError, AttributeError) as err:
            text = f"malformed response ({type(err).__name__}: {err})"
            raise ModelError(f"{cfg.model}: {text}", cause=text) from err
        except (OSError, http.client.HTTPException, BrokenStream, ValueError) as err:
            if expired.is_set():
                raise Transient(f"timed out: no complete answer within the hard limit of {limit_s:g} s") from err
            if isinstance(err, BrokenStream):
                raise
            text = network_failure(err, cfg.api_base, cfg.timeout_s) or f"{type(err).__name__}: {err}"
            raise Transient(text) from err
        finally:
            timer.cancel()
            conn.close()

    def refused(self, status: int, raw: bytes, retry_after: str | None) -> Exception:
        message = _message(raw)
        if status == 400 and context_sizes(message) != (None, None):
            limit, size = context_sizes(message)
            return ContextOverflow(f"{self.config.model}: context window exceeded: {message}", limit or 0, size)
        named = f"{STATUS_WORDS[status]}: " if status in STATUS_WORDS else ""
        text = f"{named}HTTP {status}: {message}"
        if status in RETRYABLE_STATUS or status >= 500:
            return Transient(text, _seconds(retry_after), status)
        return ModelError(f"{self.config.model}: {text}", cause=text)


def events(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The JSON of each `data:` event until `[DONE]`; comments (llama.cpp's pings) skipped."""
    seen = False
    while line := _line(response):
        text = line.decode("utf-8", "replace").strip()
        if not text.startswith("data:"):
            continue
        data = text[5:].strip()
        if data == "[DONE]":
            return
        seen = True
        yield json.loads(data)
    raise BrokenStream(seen, "the stream ended before [DONE]")


def _line(response: http.client.HTTPResponse) -> bytes:
    """The next line; b"" when the server closed the connection within its answer."""
    try:
        return response.readline()
    except (http.client.IncompleteRead, ConnectionResetError):
        return b""


def assemble(chunks: Iterator[dict[str, Any]]) -> Reply:
    """A Reply from a stream's chunks: deltas joined, tool calls by their index."""
    content: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    for chunk in chunks:
        if isinstance(chunk.get("error"), dict):
            raise BrokenStream(True, _message(json.dumps(chunk).encode()))
        usage, timings = chunk.get("usage") or usage, chunk.get("timings") or timings
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", len(calls)), {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
    raw = [
        RawToolCall(id=c["id"] or f"call_{i}", name=c["name"], arguments=c["arguments"])
        for i, c in enumerate(calls[k] for k in sorted(calls))
    ]
    return _with_usage(Reply(content="".join(content), tool_calls=raw), usage, timings)


def reply_of(answer: dict[str, Any]) -> Reply:
    """A Reply from a non-streamed answer."""
    message = answer["choices"][0]["message"]
    raw = [
        RawToolCall(id=c.get("id") or f"call_{i}", name=c["function"]["name"], arguments=c["function"]["arguments"])
        for i, c in enumerate(message.get("tool_calls") or [])
    ]
    return _with_usage(
        Reply(content=message.get("content") or "", tool_calls=raw), answer.get("usage"), answer.get("timings")
    )


def _with_usage(reply: Reply, usage: dict[str, Any] | None, timings: dict[str, Any] | None) -> Reply:
    if not usage or not usage.get("prompt_tokens"):  # no real request has 0 prompt tokens
        return reply
    return reply.model_copy(
        update={
            "prompt_tokens": usage["prompt_tokens"],
            "completion_tokens": usage.get("completion_tokens"),
            "cached_tokens": stream_cache_read(usage, timings),
        }
    )


def _shutdown(conn: http.client.HTTPConnection) -> None:
    """Wake a read blocked on the connection's socket (closing alone may not)."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _message(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    try:
        found = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:ERROR_CHARS] or "no message"
    error = found.get("error") if isinstance(found, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    return " ".join(str(message or text).split())[:ERROR_CHARS]


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
