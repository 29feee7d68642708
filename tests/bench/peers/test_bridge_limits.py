"""The bridge refuses a request over its size before reading it (a peer cannot make the host read,
parse or record an unbounded body), on its real Unix socket."""

from __future__ import annotations

import socket
from pathlib import Path

from bench.peers.bridge import MAX_REQUEST_BYTES, Bridge


def test_a_request_over_the_limit_is_refused_unread(tmp_path: Path):
    with Bridge(None, tmp_path / "bridge.sock") as bridge:  # type: ignore[arg-type]  # no op is reached
        peer = socket.socket(socket.AF_UNIX)
        peer.connect(str(tmp_path / "bridge.sock"))
        head = (
            f"POST / HTTP/1.1\r\nHost: x\r\nX-Bridge-Token: {bridge.token}\r\n"
            f"Content-Length: {MAX_REQUEST_BYTES + 1}\r\n\r\n"
        )
        peer.sendall(head.encode())  # and never the body: the answer must not wait for it
        peer.settimeout(10)
        answer = b"".join(iter(lambda: peer.recv(4096), b"")).decode()
        peer.close()
    assert answer.startswith("HTTP/1.0 413") and "over the bridge's" in answer
