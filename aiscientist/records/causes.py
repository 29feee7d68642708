"""Why a step did not count: one class per kind of failure, shown with a short detail."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import StrEnum


class FailureCause(StrEnum):
    COMMAND_NOT_FOUND = "command not found"
    EXIT_CODE = "exit code"
    TIMEOUT = "timeout"
    METRICS_FILE_MISSING = "metrics file missing"
    METRICS_FILE_INVALID = "metrics file invalid"
    METRIC_MISSING = "metric missing"
    METRIC_NOT_NUMBER = "metric not a number"
    CONSTRAINT_VIOLATED = "constraint violated"
    PROTECTED_CHANGED = "protected file changed"
    INTEGRITY = "integrity violation"
    DISK_QUOTA = "disk quota"
    MEMORY = "memory limit"  # the kernel killed a process of the step at sandbox.memory_mb


def summarize(failures: Iterable[tuple[FailureCause, str]]) -> str:
    """`exit code ×2, timeout ×1; last: <detail>` for a run's failed steps."""
    items = list(failures)
    if not items:
        return ""
    counts = Counter(cause for cause, _ in items)
    listed = ", ".join(f"{cause.value} ×{n}" for cause, n in counts.most_common())
    return f"{listed}; last: {items[-1][1]}"
