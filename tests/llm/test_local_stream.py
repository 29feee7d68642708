"""`local/` models stream: the real client and `StreamBackend` against a loopback HTTP server that
answers in llama.cpp's streamed shape (server-sent events, chunked, pings, the usage and `timings`
in the last chunk). The cached prompt tokens it reports reach llm_calls.jsonl; a client that gives
up closes the stream, and the server stops generating at its next token."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from aiscientist.llm import LLMConfig, make_client, read_records
from aiscientist.llm.types import ContextOverflow, ModelUnavailable

MODEL = "local/tiny"
MESSAGES = [{"role": "system", "content": "ROLE: flat"}, {"role": "user", "content": "TASK BRIEF: go."}]
CALL = {"name": "run_experiment", "arguments": {"hypothesis": "baseline"}}
SCHEMA = {"type": "object", "properties": {"hypothesis": {"type": "string"}}, "required": ["hypothesis"]}
RUN = {"type": "function", "function": {"name": "run_experiment", "description": "Run.", "parameters": SCHEMA}}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "tiny", "choices": [choice], **extra}


class LlamaLike:
    """A loopback server streaming `pieces` (text, or a delta; one every `gap_s`), then llama.cpp's last chunk
    (`usage`, and `timings` with `cache_n`/`prompt_n`). It stops when a write fails, as llama.cpp's
    server stops generating for a closed connection, and notes how many pieces it sent."""

    def __init__(
        self, pieces: list[str | dict[str, Any]], last: dict[str, Any], gap_s: float = 0.0, stream_error: bool = False
    ):
        self.pieces, self.last, self.gap_s, self.stream_error = pieces, last, gap_s, stream_error
        self.requests: list[dict[str, Any]] = []
        self.sent, self.stopped_at, self.finished = 0, None, threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.api_base = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                self.answer(200, {"object": "list", "data": [{"id": "tiny", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                if not body.get("stream"):
                    message = "Requested tokens (9000) exceed context window of 8192"
                    return self.answer(400, {"error": {"message": message, "type": "invalid_request_error"}})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    self.write(b": ping - keep-alive\n\n")
                    if server.stream_error:  # llama-cpp-python: the error after the headers, the stream cut
                        self.close_connection = True
                        return self.wfile.flush()
                    self.stream()
                except OSError:
                    server.stopped_at = time.monotonic()
                finally:
                    server.finished.set()

            def stream(self) -> None:
                for piece in server.pieces:
                    time.sleep(server.gap_s)
                    self.event(chunk({"content": piece} if isinstance(piece, str) else piece))
                    server.sent += 1
                self.event(server.last)
                self.write(b"data: [DONE]\n\n")
                self.write(b"")

            def event(self, data: dict[str, Any]) -> None:
                self.write(b"data: " + json.dumps(data).encode() + b"\n\n")

            def write(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def answer(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        return Handler

    def __enter__(self) -> LlamaLike:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def client(server: LlamaLike, tmp_path: Path, **settings: Any) -> Callable[..., Any]:
    config = LLMConfig(model=MODEL, api_base=server.api_base, gguf="tiny", max_attempts=1, **settings)
    return make_client(MODEL, tmp_path, config=config).complete


LAST = {  # llama.cpp's server: the usage (with include_usage) and its timings in the last chunk
    "details": chunk(
        {}, "stop",
        usage={"prompt_tokens": 1200, "completion_tokens": 3, "total_tokens": 1203,
               "prompt_tokens_details": {"cached_tokens": 1150}},
        timings={"cache_n": 1150, "prompt_n": 50, "predicted_n": 3},
    ),
    "timings only": chunk(
        {}, "stop", usage={"prompt_tokens": 1200, "completion_tokens": 3, "total_tokens": 1203},
        timings={"cache_n": 1150, "prompt_n": 50, "predicted_n": 3},
    ),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(LAST))
def test_a_streamed_answer_is_put_together_and_its_cached_tokens_recorded(shape: str, tmp_path: Path) -> None:
    text = json.dumps(CALL)
    with LlamaLike([text[:10], text[10:25], text[25:]], LAST[shape]) as server:
        c = client(server, tmp_path, tool_calls="text")(MESSAGES, [RUN])
    (sent,) = server.requests
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True} and sent["model"] == "tiny"
    assert [(t.name, t.arguments) for t in c.tool_calls] == [(CALL["name"], CALL["arguments"])]
    (record,) = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert (record["prompt_tokens"], record["cached_tokens"], record["completion_tokens"]) == (1200, 1150, 3)
    assert (c.prompt_tokens, c.cached_tokens) == (1200, 1150) and record["tokens_estimated"] is False
    assert record["tool_calls"] == ["run_experiment"]


def test_streamed_native_tool_calls_are_joined_by_index(tmp_path: Path) -> None:
    opened = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "finish", "arguments": ""}}
    pieces = [
        {"tool_calls": [opened]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"summary": '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"done"}'}}]},
    ]
    last = chunk({}, "tool_calls", usage={"prompt_tokens": 40, "completion_tokens": 9})
    tool = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object"}}}
    with LlamaLike(pieces, last) as server:
        c = client(server, tmp_path, tool_calls="native")(MESSAGES, [tool])
    assert [(t.id, t.name, t.arguments) for t in c.tool_calls] == [("call_a", "finish", {"summary": "done"})]
    assert server.requests[0]["tools"] == [tool] and c.cached_tokens == 0


def test_a_client_that_gives_up_closes_the_stream_and_the_server_stops_generating(tmp_path: Path) -> None:
    """100 pieces 0.1 s apart (10 s); the client's hard limit is 1 s + 1 s of grace."""
    with LlamaLike(["x"] * 100, LAST["details"], gap_s=0.1) as server:
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match="hard limit"):
            client(server, tmp_path, timeout_s=1.0)(MESSAGES)
        gave_up = time.monotonic()
        assert server.finished.wait(5), "the server is still generating for a client that left"
    assert gave_up - started < 3.0
    assert server.stopped_at is not None and server.stopped_at - gave_up < 1.0
    assert 5 <= server.sent < 40  # it stopped soon after the client left, far from the 100 pieces
    (record,) = read_records(tmp_path / "logs" / "llm_calls.jsonl")
    assert record["outcome"] == "error" and record["kind"] == "unavailable"


def test_a_stream_cut_before_any_answer_is_asked_again_unstreamed_for_the_servers_error(tmp_path: Path) -> None:
    """llama-cpp-python finds an overlong prompt after it has sent the stream's headers."""
    with LlamaLike([], LAST["details"], stream_error=True) as server:
        with pytest.raises(ContextOverflow) as caught:
            client(server, tmp_path, timeout_s=5.0)(MESSAGES)
    assert [r["stream"] for r in server.requests] == [True, False]
    assert "exceed context window of 8192" in str(caught.value)
