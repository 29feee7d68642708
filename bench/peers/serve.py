"""A threaded HTTP server as a context manager: on a free loopback port (the tests' scripted
model), or on a Unix socket (the bridge and the token meter, which a sandboxed peer reaches
through a socket folder mounted into its sandbox, having no network of its own)."""

from __future__ import annotations

import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _QuietOnHangUp:
    """A client that hangs up before its answer is sent (a peer ended at its budget, or by its own
    timeout) is no error of the server: no traceback on the user's console."""

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001 (socketserver's signature)
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[misc]


class _UnixHTTPServer(_QuietOnHangUp, socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


class _TCPServer(_QuietOnHangUp, ThreadingHTTPServer):
    pass


class _UnixHandler(BaseHTTPRequestHandler):
    def address_string(self) -> str:  # a Unix peer has no host address
        return "unix"


class LoopbackServer:
    def serve(self, handler: type[BaseHTTPRequestHandler], unix: Path | None = None) -> None:
        self.socket_path = unix
        if unix is None:
            self._server: socketserver.BaseServer = _TCPServer(("127.0.0.1", 0), handler)
        else:
            unix_handler = type(handler.__name__, (_UnixHandler, handler), {})
            self._server = _UnixHTTPServer(str(unix), unix_handler)
            unix.chmod(0o666)  # a container user other than ours may connect too
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        if self.socket_path is not None:
            return f"unix:{self.socket_path}"
        return f"http://127.0.0.1:{self._server.server_address[1]}"  # type: ignore[index]

    def __enter__(self):  # noqa: ANN204 (the subclass itself)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)
