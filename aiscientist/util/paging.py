"""A file longer than one tool result is shown a page at a time, by whole lines, and the
page says exactly how to read on: the tool, the line to start from and how many lines
remain (`Page.shown`). The offline policy reads the same note back (`next_start`) to
page through a file, as a model would; any other clipped result says what it left out
(`clip_lines`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_MORE = re.compile(r"\n\[(?:\d+ more lines?|more lines) \(from line (\d+)\) not shown; continue with \w+\(.*\)\]\n?\Z")


@dataclass(frozen=True)
class Page:
    """Lines `first`..`last` of a file (their text; `last` = first - 1 when none was shown),
    and its `total` lines (None: more than were counted)."""

    text: str
    first: int
    last: int
    total: int | None

    @property
    def more(self) -> bool:
        return self.total is None or self.last < self.total

    def note(self, tool: str, path: str, start_arg: str = "start_line") -> str:
        """The closing line of a page that is not the file's last, naming the call that continues."""
        if not self.more:
            return ""
        rest = self.total - self.last if self.total is not None else None
        count = "more lines" if rest is None else f"{rest} more line{'' if rest == 1 else 's'}"
        return f"\n[{count} (from line {self.last + 1}) not shown; continue with {tool}(path={json.dumps(path)}, " + (
            f"{start_arg}={self.last + 1})]"
        )

    def shown(self, tool: str, path: str, start_arg: str = "start_line") -> str:
        """The page as a tool result: its lines, then the note when lines remain."""
        return self.text.removesuffix("\n") + self.note(tool, path, start_arg) if self.more else self.text


def next_start(result: str) -> tuple[str, int | None]:
    """(the page's text without its closing note, the line to continue from; None at the file's end)."""
    found = _MORE.search(result)
    return (result[: found.start()] + "\n", int(found.group(1))) if found else (result, None)


def clip_lines(text: str, limit: int, how: str) -> str:
    """`text` cut at a line end within `limit` characters, closed by a note saying how many
    lines were left out and `how` to see them."""
    if len(text) <= limit:
        return text
    head = text[: limit - min(200, limit // 2)]  # room for the note
    head = head[: head.rfind("\n") + 1] or head
    left = text[len(head) :]
    lines = left.count("\n") + (not left.endswith("\n"))
    return f"{head}[{lines} more line{'' if lines == 1 else 's'} ({len(left)} characters) not shown; {how}]"
