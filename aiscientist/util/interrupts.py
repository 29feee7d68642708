"""Ctrl-C held back until a short block that must not stop halfway has ended."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """SIGINT during the block is acted on when it ends (as the handler before it would have).
    Only the main thread is concerned: Python raises KeyboardInterrupt nowhere else."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
        if caught:
            if callable(previous):
                previous(signal.SIGINT, None)
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)
