"""The role-scoped file API that every agent file tool calls.

Each path goes through `_resolve`: it must be relative, free of `..`, of sane
length, and its real location (symlinks followed) must stay inside the run
folder; the policy is then asked about both the path as written and the path
it really leads to. Refusals are recorded as `access.denied` events and raised
as `PermissionDenied`, a `ToolError` the agent loop returns to the model.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from aiscientist.workspace.errors import PermissionDenied, ToolError
from aiscientist.workspace.permissions import Op, Policy

if TYPE_CHECKING:
    from aiscientist.workspace.workspace import Workspace

MAX_WRITE_BYTES = 1_000_000
MAX_APPEND_BYTES = 64_000
MAX_READ_BYTES = 200_000
MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255
MAX_LIST = 500
MAX_HITS = 200
MAX_SEARCH_FILE_BYTES = 2_000_000


class Scope:
    """What one role may do in one workspace. Paths are relative to the run folder."""

    def __init__(self, ws: Workspace, role: str, policy: Policy):
        self.ws, self.role, self.policy = ws, role, policy
        self.root = ws.paths.root
        self._sessions: dict[str, int] = {}

    # ---- operations ---------------------------------------------------------------

    def read(self, path: str, start_line: int = 1, max_lines: int | None = None) -> str:
        """Lines `start_line`.. of a text file (all when `max_lines` is None),
        cut at MAX_READ_BYTES with a note saying where to continue."""
        rel, real = self._resolve("read", path)
        if real.is_dir():
            raise ToolError(f"{rel} is a folder; use list_files")
        if not real.is_file():
            raise ToolError(f"{rel}: no such file")
        if start_line < 1 or (max_lines is not None and max_lines < 1):
            raise ToolError("start_line and max_lines must be at least 1")
        try:
            return _read_lines(real, start_line, max_lines)
        except OSError as err:
            raise ToolError(f"{rel}: cannot read: {err.strerror}") from None

    def write(self, path: str, content: str) -> str:
        rel, real = self._resolve("write", path)
        data = content.encode()
        if len(data) > MAX_WRITE_BYTES:
            self._deny("write", rel, f"{len(data)} bytes exceeds the {MAX_WRITE_BYTES}-byte write limit")
        if real.is_dir():
            raise ToolError(f"{rel} is a folder")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as err:
            raise ToolError(f"{rel}: cannot write: {err.strerror}") from None
        self.ws.events.record(self.role, "file.write", {"path": rel, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        self.ws.changed(lazy=True)
        return f"wrote {len(data)} bytes to {rel}"

    def edit(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of `old` by `new`."""
        rel, real = self._resolve("write", path, verb="edit")
        if not real.is_file():
            raise ToolError(f"{rel}: no such file")
        if not old:
            raise ToolError("old text must not be empty")
        try:
            text = real.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            raise ToolError(f"{rel}: cannot read: {err.strerror}") from None
        count = text.count(old)
        if count != 1:
            raise ToolError(f"{rel}: the old text occurs {count} times; it must occur exactly once (add surrounding lines to make it unique)" if count else f"{rel}: old text not found")
        return self.write(rel, text.replace(old, new, 1)).replace("wrote", "edited; wrote", 1)

    def list(self, path: str = ".") -> list[str]:
        """Entries of a folder the role may see; folders end with `/`."""
        rel, real = self._resolve_dir("list", path)
        if real.is_file():
            return [rel]
        if not real.is_dir():
            raise ToolError(f"{rel}: no such folder")
        entries: list[str] = []
        try:
            names = sorted(os.listdir(real))
        except OSError as err:
            raise ToolError(f"{rel}: cannot list: {err.strerror}") from None
        for name in names:
            child = _join(rel, name)
            shown = self._visible(child, real / name)
            if shown:
                entries.append(shown)
        if len(entries) > MAX_LIST:
            entries = entries[:MAX_LIST] + [f"[... {len(entries) - MAX_LIST} more entries]"]
        return entries

    def search(self, pattern: str, path: str = ".") -> list[str]:
        """`path:line: text` for every line matching the regular expression."""
        try:
            regex = re.compile(pattern)
        except re.error as err:
            raise ToolError(f"invalid regular expression {pattern!r}: {err}") from None
        rel, real = self._resolve_dir("search", path)
        hits: list[str] = []
        for file_rel, file_real in self._readable_files(rel, real):
            try:
                data = file_real.read_bytes() if file_real.stat().st_size <= MAX_SEARCH_FILE_BYTES else b"\0"
            except OSError:
                continue
            if b"\0" in data[:1024]:
                continue
            for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if regex.search(line):
                    hits.append(f"{file_rel}:{number}: {line[:200]}")
                    if len(hits) >= MAX_HITS:
                        return hits + [f"[... stopped at {MAX_HITS} matches]"]
        return hits

    def append(self, log: str, text: str) -> str:
        """Append to `exp_log` or `impl_log`; the first append of this scope opens
        a new `=== Session N ===` block, later ones continue it."""
        reason = self.policy.log_refusal(log)
        if reason:
            self._deny("append to", str(log), reason)
        if len(text.encode()) > MAX_APPEND_BYTES:
            self._deny("append to", log, f"{len(text.encode())} bytes exceeds the {MAX_APPEND_BYTES}-byte append limit")
        rel = self.policy.logs[log]
        _, session = self.ws.events.append_text(self.role, rel, text, self._sessions.get(log))
        self._sessions[log] = session
        self.ws.changed(lazy=True)
        return f"appended to {rel} (session {session})"

    # ---- path checks --------------------------------------------------------------

    def _resolve(self, op: Op, path: str, verb: str | None = None) -> tuple[str, Path]:
        rel = self._clean(verb or op, path)
        if rel == ".":
            self._deny(verb or op, ".", "that is the run folder itself, not a file")
        real = self._real(verb or op, rel)
        self._check(op, rel, real, verb or op)
        return rel, real

    def _resolve_dir(self, verb: str, path: str) -> tuple[str, Path]:
        rel = self._clean(verb, path)
        real = self._real(verb, rel)
        if real.is_file():
            self._check("read", rel, real, verb)
            return rel, real
        real_rel = self._rel(real)
        for candidate in dict.fromkeys([rel, real_rel]):
            reason = self.policy.dir_refusal(candidate)
            if reason:
                self._deny(verb, rel, reason if candidate == rel else f"it leads to {real_rel}: {reason}")
        return rel, real

    def _clean(self, verb: str, path: str) -> str:
        if not isinstance(path, str):
            self._deny(verb, repr(path), "path must be a string")
        shown = path[:200]
        if "\0" in path:
            self._deny(verb, shown.replace("\0", "\\0"), "NUL byte in path")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            self._deny(verb, ascii(shown), "path is not valid UTF-8")
        if len(path.encode()) > MAX_PATH_BYTES:
            self._deny(verb, shown + "...", f"path longer than {MAX_PATH_BYTES} bytes")
        if path.startswith("/"):
            self._deny(verb, shown, "absolute paths are not allowed; use a path relative to the run folder")
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            self._deny(verb, shown, "'..' is not allowed in paths")
        if any(len(p.encode()) > MAX_NAME_BYTES for p in parts):
            self._deny(verb, shown, f"a name in the path is longer than {MAX_NAME_BYTES} bytes")
        return "/".join(parts) or "."

    def _real(self, verb: str, rel: str) -> Path:
        root = Path(os.path.realpath(self.root))
        try:
            real = Path(os.path.realpath(self.root / rel))
        except (OSError, ValueError) as err:
            self._deny(verb, rel, f"cannot resolve: {err}")
        if real != root and not real.is_relative_to(root):
            self._deny(verb, rel, "it leads outside the workspace (symlink)")
        return real

    def _rel(self, real: Path) -> str:
        root = Path(os.path.realpath(self.root))
        return real.relative_to(root).as_posix() if real != root else "."

    def _check(self, op: Op, rel: str, real: Path, verb: str) -> None:
        reason = self.policy.refusal(op, rel)
        if reason:
            self._deny(verb, rel, reason)
        real_rel = self._rel(real)
        if real_rel != rel:
            reason = self.policy.refusal(op, real_rel)
            if reason:
                self._deny(verb, rel, f"it leads to {real_rel}: {reason}")
        reason = _odd_file(real)
        if reason:
            self._deny(verb, rel, reason)

    def _visible(self, rel: str, full: Path) -> str | None:
        """How a folder entry is listed (`name/` for folders), or None when the
        role may not see it; links count as what they lead to."""
        real = Path(os.path.realpath(full))
        root = Path(os.path.realpath(self.root))
        if not real.is_relative_to(root):
            return None
        candidates = dict.fromkeys([rel, self._rel(real)])
        if _odd_file(real):
            return None
        if real.is_dir():
            return rel + "/" if all(self.policy.dir_refusal(c) is None for c in candidates) else None
        return rel if all(self.policy.refusal("read", c) is None for c in candidates) else None

    def _readable_files(self, rel: str, real: Path):
        if real.is_file():
            yield rel, real
            return
        if not real.is_dir():
            raise ToolError(f"{rel}: no such file or folder")
        for folder, dirs, files in os.walk(real):
            base = Path(folder)
            folder_rel = self._rel(base)
            dirs[:] = sorted(d for d in dirs if self.policy.dir_refusal(_join(folder_rel, d)) is None)
            for name in sorted(files):
                file_rel = _join(folder_rel, name)
                full = base / name
                if full.is_symlink() or _odd_file(full) or self.policy.refusal("read", file_rel) is not None:
                    continue
                yield file_rel, full

    def _deny(self, verb: str, path: str, reason: str):
        error = PermissionDenied(self.role, verb, path, reason)
        self.ws.events.record(self.role, "access.denied", {"op": verb, "path": path, "reason": reason})
        raise error


def _odd_file(path: Path) -> str | None:
    """Why an existing path is unsafe to open whatever its name says: a FIFO or
    device would block or leak, and a file with several hard links may alias a
    protected file or one outside the workspace."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return None
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_nlink > 1:
        return f"the file has {info.st_nlink} hard links (it may alias another file)"
    return None


def _read_lines(path: Path, start_line: int, max_lines: int | None) -> str:
    with open(path, "rb") as handle:
        if b"\0" in handle.read(1024):
            raise ToolError(f"binary file ({path.stat().st_size} bytes); it cannot be shown as text")
    out: list[str] = []
    size = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if number < start_line:
                continue
            if max_lines is not None and len(out) >= max_lines:
                break
            size += len(line)
            if size > MAX_READ_BYTES:
                out.append(f"\n[... cut at {MAX_READ_BYTES} characters; continue with start_line={number}]\n")
                break
            out.append(line)
    return "".join(out)


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"
