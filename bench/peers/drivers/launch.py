"""The first thing a peer's sandbox runs (standard library only, under the peer's interpreter).

The sandbox has no network but its own loopback; the host's bridge and model relay are Unix
sockets in a folder mounted into it (`$AISCI_SOCKETS`). This opens a listener on
127.0.0.1 for each socket there, relays every connection to it byte for byte, tells the
driver the loopback addresses (`AISCI_BRIDGE`, `AISCI_MODEL_BASE`) and runs the driver in
this process, so the peer's own client talks to an ordinary `http://127.0.0.1:<port>`.

Run as `PEER_PYTHON launch.py DRIVER BRIEF_JSON`.
"""

from __future__ import annotations

import os
import runpy
import socket
import sys
import threading

# socket file -> the variable that carries its loopback address
SOCKETS = {"bridge.sock": "AISCI_BRIDGE", "model.sock": "AISCI_MODEL_BASE"}


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(1 << 16):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (sink, source):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    pump(upstream, client)
    client.close()
    upstream.close()


def listen(path: str) -> int:
    """A loopback listener relaying to the Unix socket `path`; its port."""
    server = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            client, _ = server.accept()
            threading.Thread(target=relay, args=(client, path), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


def main(driver: str, brief: str) -> None:
    folder = os.environ["AISCI_SOCKETS"]
    for name, variable in SOCKETS.items():
        path = os.path.join(folder, name)
        if os.path.exists(path):
            os.environ[variable] = f"http://127.0.0.1:{listen(path)}"
    sys.argv = [driver, brief]
    sys.path.insert(0, os.path.dirname(os.path.abspath(driver)))
    runpy.run_path(driver, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
