"""Errors the file API returns to agents as tool errors (never crashes)."""

from __future__ import annotations


class ToolError(Exception):
    """A tool call that cannot be done; the message goes back to the agent."""


class PermissionDenied(ToolError):
    """A role tried to touch a path outside what it may; recorded as an event."""

    def __init__(self, role: str, op: str, path: str, reason: str):
        self.role, self.op, self.path, self.reason = role, op, path, reason
        super().__init__(f"{role} may not {op} {path}: {reason}")
