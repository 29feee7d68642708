"""The host end of a peer run: an HTTP endpoint on a Unix socket (one random token per run)
through which the peer's process asks for the only things it may do to the run.

- `shell`: a command, run in `submission/` through the run's sandbox with the `agent`
  role's writable areas (the same path as the baselines' bash tool);
- `write`: an editable file, through the role-scoped file API;
- `experiment`: one counted step of our experiment engine on the current code; its answer
  is our step result, and the peer's own number never enters a result.

The peer never executes model-written code itself: its drivers route every command and
evaluation here.
"""

from __future__ import annotations

import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import describe, run_step_once, step_result
from aiscientist.agent.outcome import StopRun
from aiscientist.agent.shell import sandboxed_shell
from aiscientist.records.paths import STDERR
from aiscientist.workspace.errors import ToolError
from bench.peers.serve import LoopbackServer

ROLE = "agent"
OUTPUT_CHARS = 10000
MAX_REQUEST_BYTES = 8 << 20  # a request (a whole editable file at most) is refused over this, unread
HYPOTHESIS_CHARS = 2000  # what a step records of the peer's hypothesis


class Bridge(LoopbackServer):
    """Serves one run's peer; `calls` counts what it was asked (for the stop reason)."""

    def __init__(self, ctx: RunContext, unix: Path | None = None):
        self.ctx = ctx
        self.token = secrets.token_hex(16)
        self.calls = {"shell": 0, "experiment": 0, "write": 0}
        self._lock = threading.Lock()  # one action at a time: the peer's order is the run's order
        self.serve(_handler(self), unix)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        with self._lock:
            if op == "shell":
                return self.shell(str(request.get("command", "")))
            if op == "write":
                return self.write(str(request.get("path", "")), str(request.get("text", "")))
            if op == "experiment":
                return self.experiment(str(request.get("hypothesis", ""))[:HYPOTHESIS_CHARS])
            if op == "brief":
                return {"steps_left": 0 if self.ctx.out_of_time() else self.ctx.steps_left()}
        return {"error": f"unknown op {op!r}"}

    def shell(self, command: str) -> dict[str, Any]:
        self.calls["shell"] += 1
        result = sandboxed_shell(self.ctx.ws, ROLE, command)
        code = result.returncodes[-1] if result.returncodes else -1
        output = result.stdout_tail + result.stderr_tail
        return {"output": output[-OUTPUT_CHARS:], "returncode": -1 if result.timed_out else code}

    def write(self, path: str, text: str) -> dict[str, Any]:
        """An editable file, through the role-scoped file API (a peer proposing a whole file)."""
        self.calls["write"] += 1
        try:
            self.ctx.write_code(path, text)
        except (ToolError, OSError) as err:
            return {"error": str(err)}
        return {"ok": True}

    def experiment(self, hypothesis: str) -> dict[str, Any]:
        if self.ctx.steps_left() <= 0:
            return {"error": f"step budget spent ({self.ctx.steps} steps)", "steps_left": 0}
        self.calls["experiment"] += 1
        try:
            record = run_step_once(self.ctx, "", hypothesis)
        except ToolError as err:
            return {"error": str(err), "steps_left": self.ctx.steps_left()}
        except StopRun as stop:  # the run's wall time is spent: the peer's drivers stop at steps_left 0
            return {"error": str(stop), "steps_left": 0}
        stderr = self.ctx.ws.paths.step_dir(record.step) / STDERR
        tail = stderr.read_text(errors="replace")[-2000:] if stderr.is_file() else ""
        return {
            **step_result(record, self.ctx.steps_left()),
            "report": describe(self.ctx, record),
            "stderr": tail,
        }


def _handler(bridge: Bridge) -> type[BaseHTTPRequestHandler]:
    class BridgeHandler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            if self.headers.get("X-Bridge-Token") != bridge.token:
                self._send(403, {"error": "bad token"})
                return
            header = self.headers.get("Content-Length", "0") or "0"
            length = int(header) if header.isdigit() else -1
            if not 0 <= length <= MAX_REQUEST_BYTES:
                self._send(413, {"error": f"request of {length:,} bytes is over the bridge's {MAX_REQUEST_BYTES:,}"})
                return
            try:
                request = json.loads(self.rfile.read(length))
                self._send(200, bridge.answer(request if isinstance(request, dict) else {}))
            except Exception as err:  # the peer sees the failure; the run goes on
                self._send(500, {"error": f"{type(err).__name__}: {err}"})

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return BridgeHandler
