"""A peer process that attacks its host (run by tests/bench/peers/hostile.py in place of a
peer's driver, under a peer's interpreter, inside the peer sandbox): it tries every host
read, network connection, environment secret and write the brief's options name, prints
what it got as one JSON line, calls our evaluator once and ends as the options say."""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.request

from bridge_client import call, load_brief


def read(path: str) -> str:
    try:
        if os.path.isdir(path):
            return "LISTED " + ",".join(sorted(os.listdir(path))[:20])
        with open(path, errors="replace") as handle:
            return "READ " + handle.read(200)
    except OSError as err:
        return f"no {type(err).__name__}"


def connect(host: str, port: int) -> str:
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "CONNECTED"
    except OSError as err:
        return f"no {type(err).__name__}"


def write(path: str) -> str:
    try:
        with open(path, "w") as handle:
            handle.write("peer was here")
        return "WROTE"
    except OSError as err:
        return f"no {type(err).__name__}"


def ask_model(base: str) -> str:
    """One chat completion through the only endpoint the peer is given."""
    body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{base}/chat/completions", data=body, headers={"Content-Type": "x/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())["choices"][0]["message"]["content"]
    except OSError as err:
        return f"no {type(err).__name__}: {err}"


def main(brief_path: str) -> int:
    brief = load_brief(brief_path)
    options = json.loads(brief["options"]["attack"])
    if options.get("crash"):
        raise RuntimeError("the hostile peer crashed on purpose")
    seen = {
        "reads": {path: read(path) for path in options.get("reads", [])},
        "connects": {f"{h}:{p}": connect(h, int(p)) for h, p in options.get("connects", [])},
        "writes": {path: write(path) for path in options.get("writes", [])},
        "env": dict(os.environ),
        "model": ask_model(brief["model"]["api_base"]),
    }
    print("SEEN " + json.dumps(seen), flush=True)
    if options.get("evaluate", True):
        answer = call("experiment", hypothesis="hostile peer, unchanged code")
        print("EVALUATED", answer.get("success"), answer.get("metric"), flush=True)
    return int(options.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
