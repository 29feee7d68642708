"""The role-scoped file API that every agent file tool calls.

A path must be a relative string, free of `..`, NUL and lone surrogates, of sane
length (`_clean`); the policy is asked about it as written. It is then opened
through `aiscientist.util.untrusted`, one name at a time relative to the folder before, never
following a link, and the read, write, listing or search works on those open
descriptors: what is used is what was checked, whatever another process does
meanwhile. A link anywhere on the way is refused. Refusals are recorded as
`access.denied` events and raised as `PermissionDenied`; other problems (a
missing file, text that is not valid Unicode) are plain `ToolError`s. Both go
back to the model as tool errors.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from typing import Protocol

from aiscientist.records.paths import MAP_FILE, RunPaths
from aiscientist.util import untrusted
from aiscientist.util.paging import Page
from aiscientist.util.text import clean
from aiscientist.util.text import name as shown_name
from aiscientist.workspace.errors import PermissionDenied, ToolError
from aiscientist.workspace.eventlog import EventLog
from aiscientist.workspace.permissions import Op, Policy

MAX_WRITE_BYTES = 1_000_000
MAX_EDIT_BYTES = 8 * MAX_WRITE_BYTES
MAX_APPEND_BYTES = 64_000
MAX_READ_BYTES = 200_000
MAX_COUNT_CHARS = 64 << 20  # lines past a page are counted this far (further: "more lines")
MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255
MAX_PATTERN_CHARS = 2000
MAX_LIST = 500
MAX_HITS = 200
MAX_SEARCH_FILE_BYTES = 2_000_000
SEARCH_LIMITS = untrusted.Limits(depth=64, bytes=1 << 30)  # one search's walk


class ScopedWorkspace(Protocol):
    paths: RunPaths
    events: EventLog

    def changed(self) -> None: ...

    def sync_map(self) -> None: ...


class Scope:
    """What one role may do in one workspace. Paths are relative to the run folder."""

    def __init__(self, ws: ScopedWorkspace, role: str, policy: Policy):
        self.ws, self.role, self.policy = ws, role, policy
        self.root = ws.paths.root
        self._sessions: dict[str, int] = {}

    def read(self, path: str, start_line: int = 1, max_lines: int | None = None) -> str:
        """Lines `start_line`.. of a text file (all when `max_lines` is None), cut at
        MAX_READ_BYTES with a note saying how to continue (`Page.shown`)."""
        return self.read_page(path, start_line, max_lines).shown("read_file", path)

    def read_page(
        self, path: str, start_line: int = 1, max_lines: int | None = None, max_chars: int = MAX_READ_BYTES
    ) -> Page:
        """Whole lines from `start_line`, at most `max_lines` of them and `max_chars` characters
        (a first line longer than that is shown cut), with the file's line count."""
        rel = self._target("read", "read", path)
        if start_line < 1 or (max_lines is not None and max_lines < 1):
            raise ToolError("start_line and max_lines must be at least 1")
        if rel == MAP_FILE:
            self.ws.sync_map()
        with self._guard("read", "read", rel), untrusted.file(self.root, rel.split("/")) as fd:
            return _read_lines(fd, start_line, max_lines, max_chars)

    def write(self, path: str, content: str) -> str:
        rel = self._target("write", "write", path)
        return self._write("write", rel, self._text("write", rel, "content", content, MAX_WRITE_BYTES))

    def edit(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of `old` by `new`."""
        rel = self._target("write", "edit", path)
        self._text("edit", rel, "old text", old, MAX_WRITE_BYTES)
        self._text("edit", rel, "new text", new, MAX_WRITE_BYTES)
        if not old:
            raise ToolError("old text must not be empty")
        with self._guard("edit", "write", rel), untrusted.file(self.root, rel.split("/")) as fd:
            data = untrusted.read_all(fd, MAX_EDIT_BYTES + 1)
        if len(data) > MAX_EDIT_BYTES:
            raise ToolError(f"{rel} is larger than {MAX_EDIT_BYTES} bytes; it cannot be edited")
        text = data.decode("utf-8", errors="replace")
        count = text.count(old)
        if count != 1:
            raise ToolError(
                f"{rel}: the old text occurs {count} times; it must occur exactly once (add surrounding lines to make "
                "it unique)"
                if count
                else f"{rel}: old text not found"
            )
        content = text.replace(old, new, 1)
        return self._write("edit", rel, self._text("edit", rel, "content", content, MAX_WRITE_BYTES)).replace(
            "wrote", "edited; wrote", 1
        )

    def list(self, path: str = ".") -> list[str]:
        """Entries of a folder the role may see; folders end with `/`. Links,
        FIFOs and hard-linked files are not listed: the API cannot open them."""
        rel = self._clean("list", path)
        with self._guard("list", "read", rel, folder=True), untrusted.entry(self.root, _parts(rel)) as (fd, kind):
            if kind == "file":
                self._deny_if("list", rel, self.policy.refusal("read", rel))
                return [rel]
            self._deny_if("list", rel, self.policy.dir_refusal(rel))
            found = untrusted.entries(fd)
        entries: list[str] = []
        for name, kind in found:  # names may be made by experiment code: shown escaped, one per line
            child = name if rel == "." else f"{rel}/{name}"
            if kind == "dir" and self.policy.dir_refusal(child) is None:
                entries.append(shown_name(child) + "/")
            elif kind == "file" and self.policy.refusal("read", child) is None:
                entries.append(shown_name(child))
        if len(entries) > MAX_LIST:
            entries = entries[:MAX_LIST] + [f"[... {len(entries) - MAX_LIST} more entries]"]
        return entries

    def search(self, pattern: str, path: str = ".") -> list[str]:
        """`path:line: text` for every line matching the regular expression."""
        rel = self._clean("search", path)
        self._text("search", rel, "pattern", pattern, MAX_PATTERN_CHARS)
        try:
            regex = re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as err:
            raise ToolError(f"invalid regular expression {pattern[:200]!r}: {err}") from None
        with self._guard("search", "read", rel, folder=True), untrusted.entry(self.root, _parts(rel)) as (fd, kind):
            if kind == "file":
                self._deny_if("search", rel, self.policy.refusal("read", rel))
                return _matches(regex, [(rel, untrusted.read_all(fd, MAX_SEARCH_FILE_BYTES + 1))])
            self._deny_if("search", rel, self.policy.dir_refusal(rel))
            with closing(self._texts(fd, rel)) as texts:
                return _matches(regex, texts)

    def _texts(self, fd: int, rel: str) -> Iterator[tuple[str, bytes]]:
        """(run-relative path, bytes) of every plain file under open folder `fd` the role may
        read, depth first and sorted, entering only folders it may see; files over
        MAX_SEARCH_FILE_BYTES, and what changes or fails on the way, are skipped."""

        def under(child: str) -> str:
            return child if rel == "." else f"{rel}/{child}"

        walker = untrusted.TreeWalk(fd, SEARCH_LIMITS, enter=lambda d: self.policy.dir_refusal(under(d)) is None)
        for node, parent in walker:
            if node.kind == "file" and self.policy.refusal("read", under(node.rel)) is None:
                try:
                    yield under(node.rel), walker.read(parent, node, MAX_SEARCH_FILE_BYTES)
                except (untrusted.Unreadable, OSError):
                    continue

    def append(self, log: str, text: str) -> str:
        """Append to `exp_log` or `impl_log`; the first append of this scope opens
        a new `=== Session N ===` block, later ones continue it."""
        shown = _shown(str(log))
        self._deny_if("append to", shown, self.policy.log_refusal(log))
        self._text("append to", shown, "log text", text, MAX_APPEND_BYTES)
        if "\0" in text:
            raise ToolError("log text must not contain NUL characters")
        rel = self.policy.logs[log]
        _, session = self.ws.events.append_text(self.role, rel, text, self._sessions.get(log))
        self._sessions[log] = session
        self.ws.changed()
        return f"appended to {rel} (session {session})"

    def _write(self, verb: str, rel: str, data: bytes) -> str:
        with self._guard(verb, "write", rel), untrusted.file(self.root, rel.split("/"), write=True) as fd:
            untrusted.replace_content(fd, data)
        self.ws.events.record(
            self.role, "file.write", {"path": rel, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
        self.ws.changed()
        return f"wrote {len(data)} bytes to {rel}"

    def _text(self, verb: str, rel: str, what: str, value: object, limit: int) -> bytes:
        """`value` as UTF-8, refused when it is not text, not encodable (a lone
        surrogate) or longer than `limit` bytes."""
        if not isinstance(value, str):
            raise ToolError(f"the {what} must be text, not {type(value).__name__}")
        name = verb.split()[0]
        if len(value) > limit:  # every character is at least one byte: no need to encode
            self._deny(verb, rel, f"the {what} ({len(value)} characters) exceeds the {limit}-byte {name} limit")
        try:
            data = value.encode()
        except UnicodeEncodeError as err:
            raise ToolError(
                f"the {what} is not valid Unicode text: a lone surrogate {ascii(value[err.start])} at character "
                f"{err.start}"
            ) from None
        if len(data) > limit:
            self._deny(verb, rel, f"the {what} ({len(data)} bytes) exceeds the {limit}-byte {name} limit")
        return data

    def _target(self, op: Op, verb: str, path: str) -> str:
        """The clean relative path of a file that `op` on it is allowed for."""
        rel = self._clean(verb, path)
        if rel == ".":
            self._deny(verb, ".", "that is the run folder itself, not a file")
        self._deny_if(verb, rel, self.policy.refusal(op, rel))
        return rel

    def _clean(self, verb: str, path: str) -> str:
        if not isinstance(path, str):
            self._deny(verb, repr(path)[:200], "path must be a string")
        shown = _shown(path)
        if "\0" in path:
            self._deny(verb, shown, "NUL byte in path")
        try:
            size = len(path.encode("utf-8"))
        except UnicodeEncodeError:
            self._deny(verb, shown, "path is not valid UTF-8 (it holds a lone surrogate)")
        if size > MAX_PATH_BYTES:
            self._deny(verb, shown + "...", f"path longer than {MAX_PATH_BYTES} bytes")
        if path.startswith("/"):
            self._deny(verb, shown, "absolute paths are not allowed; use a path relative to the run folder")
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            self._deny(verb, shown, "'..' is not allowed in paths")
        if any(len(p.encode()) > MAX_NAME_BYTES for p in parts):
            self._deny(verb, shown, f"a name in the path is longer than {MAX_NAME_BYTES} bytes")
        return "/".join(parts) or "."

    def _deny_if(self, verb: str, rel: str, reason: str | None) -> None:
        if reason:
            self._deny(verb, rel, reason)

    @contextmanager
    def _guard(self, verb: str, op: Op, rel: str, folder: bool = False) -> Iterator[None]:
        """Turn what opening `rel` ran into into a denial or a tool error. For
        folder operations a path the role may not see is denied even when it is
        missing, so a refusal never tells whether something exists."""
        try:
            yield
        except untrusted.Link as err:
            self._deny(verb, rel, self._link_reason(op, rel, err.depth, folder))
        except untrusted.Odd as err:
            self._deny(verb, rel, err.reason)
        except (FileNotFoundError, NotADirectoryError):
            if folder and self.policy.refusal("read", rel):
                self._deny_if(verb, rel, self.policy.dir_refusal(rel))
            raise ToolError(f"{rel}: no such {'file or folder' if folder else 'file'}") from None
        except IsADirectoryError:
            raise ToolError(f"{rel} is a folder" + ("; use list_files" if op == "read" else "")) from None
        except OSError as err:
            raise ToolError(f"{rel}: cannot {verb}: {err.strerror or err}") from None

    def _link_reason(self, op: Op, rel: str, depth: int, folder: bool) -> str:
        """Why a path through a link is refused, naming where the link leads
        (worked out for the message only: nothing is opened through it)."""
        link = "/".join(rel.split("/")[:depth])
        root = os.path.realpath(self.root)
        try:
            real = os.path.realpath(os.path.join(root, rel))
            target = os.path.relpath(os.path.realpath(os.path.join(root, link)), root)
        except OSError:  # the link changed while it was looked at
            return f"{link} is a symbolic link; the file API does not follow links"
        if real != root and not real.startswith(root + os.sep):
            return "it leads outside the workspace (symlink)"
        real_rel = os.path.relpath(real, root)
        reason = (
            self.policy.dir_refusal(real_rel) if folder and os.path.isdir(real) else self.policy.refusal(op, real_rel)
        )
        if reason:
            return f"it leads to {real_rel}: {reason}"
        return f"{link} is a symbolic link (to {target}); the file API does not follow links"

    def _deny(self, verb: str, path: str, reason: str):
        error = PermissionDenied(self.role, verb, path, reason)
        self.ws.events.record(self.role, "access.denied", {"op": verb, "path": path, "reason": reason})
        raise error


def _shown(path: str) -> str:
    """A path as it may be quoted in messages and events: cut, with NUL and
    lone surrogates written as escapes."""
    return path[:200].encode("utf-8", errors="backslashreplace").decode().replace("\0", "\\0")


def _read_lines(fd: int, start_line: int, max_lines: int | None, max_chars: int) -> Page:
    """A page of whole lines (see `Scope.read_page`); the lines after it are only counted."""
    if b"\0" in os.pread(fd, 1024, 0):
        raise ToolError(f"binary file ({os.fstat(fd).st_size} bytes); it cannot be shown as text")
    out: list[str] = []
    size, total, rest, paged = 0, 0, 0, False  # rest: characters counted past the page
    with io.TextIOWrapper(open(fd, "rb", closefd=False), encoding="utf-8", errors="replace") as handle:
        for total, line in enumerate(handle, 1):
            if total < start_line:
                continue
            if not paged and (max_lines is None or len(out) < max_lines) and size + len(line) <= max_chars:
                size += len(line)
                out.append(line)
                continue
            if not paged and not out:  # one line longer than a page: shown cut
                out.append(f"{line[:max_chars]}... [line {total} cut at {max_chars} of {len(line)} characters]\n")
            elif rest + len(line) > MAX_COUNT_CHARS:
                return Page("".join(out), start_line, start_line + len(out) - 1, None)
            else:
                rest += len(line)
            paged = True
    return Page("".join(out), start_line, start_line + len(out) - 1, total)


def _matches(regex: re.Pattern[str], files: Iterable[tuple[str, bytes]]) -> list[str]:
    """Matching lines of text files given as (run-relative path, content)."""
    hits: list[str] = []
    for file_rel, data in files:
        if len(data) > MAX_SEARCH_FILE_BYTES or b"\0" in data[:1024]:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                hits.append(f"{shown_name(file_rel)}:{number}: {clean(line[:200])}")
                if len(hits) >= MAX_HITS:
                    return hits + [f"[... stopped at {MAX_HITS} matches]"]
    return hits


def _parts(rel: str) -> list[str]:
    return [] if rel == "." else rel.split("/")
