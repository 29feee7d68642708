"""One way to look a seam's implementations up by name: agents, sandboxes, model backends,
executors, peers, offline policies and commands each keep a `Registry`. The registry lives
with the seam (low); the implementations register themselves where they are defined (high).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries by name, listed sorted by name (modules register on import, in whatever order they
    were imported). `get` of an unknown name raises `error` with the known names; registering
    another entry under a taken name is refused (a bug), the same entry again is a no-op."""

    def __init__(self, kind: str, error: type[Exception] = LookupError):
        self.kind, self.error = kind, error
        self.entries: dict[str, T] = {}  # read through get/names; tests swap entries with monkeypatch
        self._lock = threading.Lock()

    def register(self, name: str, entry: T, replace: bool = False) -> T:
        with self._lock:
            if name in self.entries and self.entries[name] != entry and not replace:
                raise ValueError(f"another {self.kind} is already registered as {name!r}")
            self.entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        try:
            return self.entries[name]
        except KeyError:
            raise self.error(f"unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}") from None

    def names(self) -> list[str]:
        return sorted(self.entries)

    def values(self) -> list[T]:
        return [self.entries[name] for name in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
