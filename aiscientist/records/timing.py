"""How soon and how often a run experiments: time to first experiment (TTFE) and
experiments per hour, the figures a user on a laptop feels first.

TTFE runs from the command's start (the process's start for a CLI command, imports and
setup included; a bench cell's start) to the end of the first counted step. A baseline
measurement (agent `baseline`) is not an experiment: it is reported apart (`baseline_s`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol

BASELINE_AGENT = "baseline"


class TimedStep(Protocol):
    agent: str
    started_at: str
    duration_s: float


def process_started_at() -> float:
    """When this process started, as a wall-clock timestamp (now, where /proc cannot tell)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()


def step_end(step: TimedStep) -> float | None:
    """The wall-clock timestamp at which a step's commands ended (None: no readable start)."""
    try:
        return datetime.fromisoformat(step.started_at).timestamp() + step.duration_s
    except (TypeError, ValueError):
        return None


def first_experiment_s(steps: Sequence[TimedStep], started_at: float | None) -> float | None:
    """Seconds from `started_at` to the end of the first counted step that is not a baseline."""
    if started_at is None:
        return None
    ends = [end for s in steps if s.agent != BASELINE_AGENT and (end := step_end(s)) is not None]
    return round(max(0.0, min(ends) - started_at), 3) if ends else None


def per_hour(count: int, seconds: float | None) -> float | None:
    """`count` events over `seconds` as a rate per hour (None without time or events)."""
    return round(count * 3600 / seconds, 3) if count and seconds else None
