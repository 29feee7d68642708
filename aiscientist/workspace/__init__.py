"""File-as-Bus workspace: areas, role-scoped file API, append-only logs, map, watcher, resume."""

from aiscientist.workspace.errors import PermissionDenied, ToolError
from aiscientist.workspace.eventlog import EventLog
from aiscientist.workspace.permissions import UnknownRole
from aiscientist.workspace.scope import Scope
from aiscientist.workspace.verify import Report, verify_run
from aiscientist.workspace.workspace import RunState, Workspace

__all__ = [
    "Workspace",
    "RunState",
    "Scope",
    "EventLog",
    "PermissionDenied",
    "ToolError",
    "UnknownRole",
    "verify_run",
    "Report",
]
