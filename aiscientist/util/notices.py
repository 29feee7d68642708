"""Things the person watching a run should see as they happen (model retries, a
sub-agent that failed, a conversation that had to forget turns), from any thread,
without the code that notices them knowing about the console. `solve` listens and
shows them; nobody listening is fine."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, str], None]  # (kind, text); kinds: "model", "failure", "context"

_listeners: list[Listener] = []
_lock = threading.Lock()


def notify(kind: str, text: str) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(kind, text)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)
