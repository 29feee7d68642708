"""The one console every command prints through: untrusted text cannot drive the terminal.

Everything rich prints (markup, table cells, status lines, live tables) becomes
segments of plain text plus a style before rich writes its own escape codes; this
console cleans the text of every segment that is not one of rich's own control
segments (cursor moves of a live display), so a window title, clear-screen, clipboard or
hyperlink sequence inside an error, a file name or an output tail is shown as
visible escapes, wherever in our output it lands. Rich's own markup cannot be
turned against it either: no segment carries a hyperlink (a name like
`[link=...]x` would make rich write OSC 8 itself), and text whose brackets are not
valid markup (a case named `a[` in folder `x]` printed as `a[/x]`) is printed as
it is instead of raising MarkupError. Newlines are kept (our own
messages span lines); experiment strings are folded onto one line where they are
quoted (`aiscientist.util.text.clean`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.errors import MarkupError
from rich.segment import Segment
from rich.text import Text

from aiscientist.util.text import clean


class SafeConsole(Console):
    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
                continue
            style = segment.style.update_link(None) if segment.style and segment.style.link else segment.style
            text = (
                segment.text if segment.text.isprintable() or segment.text == "\n" else clean(segment.text, fold=False)
            )
            yield Segment(text, style)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        try:
            return super().render_str(text, **kwargs)
        except MarkupError:  # brackets from untrusted text that are not valid markup: shown as they are
            return super().render_str(text, **{**kwargs, "markup": False})


def make_console(stderr: bool = False, soft_wrap: bool = False, **kwargs: Any) -> Console:
    """A console for one command's output (`stderr` for errors and progress)."""
    return SafeConsole(stderr=stderr, soft_wrap=soft_wrap, **kwargs)


class _CleanFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return clean(super().format(record), fold=False)


def log_handler() -> logging.Handler:
    """Log lines on stderr, cleaned like the console's (a warning may quote experiment text)."""
    handler = logging.StreamHandler()
    handler.setFormatter(_CleanFormatter("%(levelname)s %(name)s: %(message)s"))
    return handler
