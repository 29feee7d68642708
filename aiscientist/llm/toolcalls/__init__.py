"""Tool calls from any model: native, read from text, or with the schemas in the prompt."""

from aiscientist.llm.toolcalls.modes import (
    TOOLS_SLOT,
    ToolCallMode,
    outgoing,
    render_tools,
    reply_calls,
    stop_sequences,
)
from aiscientist.llm.toolcalls.parse import TextCall, parse_text_calls

__all__ = [
    "TOOLS_SLOT",
    "TextCall",
    "ToolCallMode",
    "outgoing",
    "parse_text_calls",
    "render_tools",
    "reply_calls",
    "stop_sequences",
]
