"""The files setup wrote under `.pristine/` (the protected files' manifest, the baseline tree and
folders), read through a cache: a step asks for them several times, and a large repository's tree
costs a parse each time. A file is parsed again whenever it changed (inode, size or mtime), so what
the engine sees is always what is on disk; these are host files no sandbox can write."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

Stamp = tuple[int, int, int]


class SetupFiles:
    def __init__(self) -> None:
        self._parsed: dict[Path, tuple[Stamp, Any]] = {}

    def read(self, path: Path, missing: Any, parse: Callable[[Any], Any] = lambda raw: raw) -> Any:
        """`parse` of the JSON in `path` (`missing` when there is no such file); shared: do not change it."""
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return missing
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
        cached = self._parsed.get(path)
        if cached is None or cached[0] != stamp:
            cached = self._parsed[path] = (stamp, parse(json.loads(path.read_text())))
        return cached[1]
