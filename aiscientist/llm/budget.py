"""Per-run model budget and the `logs/llm_calls.jsonl` accounting it is rebuilt from.

One tracker per run directory, shared by every client of that run (thread-safe).
A call first reserves its estimated use; the reservation is replaced by the real
use when the call's record is written, so parallel callers cannot overshoot a limit
together.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aiscientist.llm.config import BudgetLimits
from aiscientist.llm.types import BudgetExhausted
from aiscientist.records.accounting import CallUsage, call_usage
from aiscientist.records.paths import RunPaths
from aiscientist.util.appendfile import LockedAppendFile


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a calls log; a torn last line (crash mid-write) is skipped."""
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


@dataclass
class Reservation:
    tokens: int
    cost_usd: float
    calls: int = 1


class BudgetTracker:
    def __init__(self, limits: BudgetLimits, log_path: Path | None = None):
        self.limits = limits
        self.log_path = log_path
        self._log = LockedAppendFile(log_path) if log_path is not None else None
        self._lock = threading.Lock()
        self._used = call_usage(read_records(log_path) if log_path else [])
        self._reserved = Reservation(0, 0.0, 0)
        self._prior_wall_s = self._used.wall_time_s
        self._started = time.monotonic()

    def typical_completion_tokens(self) -> int:
        """Mean completion size so far: the estimate of a call's answer when no
        max_tokens bounds it."""
        with self._lock:
            return round(self._used.answer_tokens / self._used.answered) if self._used.answered else 0

    def elapsed_s(self) -> float:
        """Wall time of the run so far, including earlier sessions of a resumed run."""
        return self._prior_wall_s + time.monotonic() - self._started

    def count_from(self, elapsed_s: float) -> None:
        """The run has taken `elapsed_s` seconds so far (its earlier sessions and this one's start,
        as its owner counts them): the clock goes on from there."""
        self._prior_wall_s, self._started = elapsed_s, time.monotonic()

    def used(self) -> CallUsage:
        with self._lock:
            return replace(self._used)

    def reserve(self, tokens: int, cost_usd: float) -> Reservation:
        """Claim room for one call or raise BudgetExhausted naming the limit."""
        lim = self.limits
        with self._lock:
            calls = self._used.calls + self._reserved.calls
            used_tokens = self._used.tokens + self._reserved.tokens
            used_cost = self._used.cost + self._reserved.cost_usd
            if lim.calls is not None and calls + 1 > lim.calls:
                raise BudgetExhausted("calls", calls, 1, lim.calls)
            if lim.tokens is not None and used_tokens + tokens > lim.tokens:
                raise BudgetExhausted("tokens", used_tokens, tokens, lim.tokens)
            if lim.cost_usd is not None and used_cost + cost_usd > lim.cost_usd:
                raise BudgetExhausted("cost_usd", round(used_cost, 6), round(cost_usd, 6), lim.cost_usd)
            if lim.wall_time_s is not None and self.elapsed_s() >= lim.wall_time_s:
                raise BudgetExhausted("wall_time_s", round(self.elapsed_s(), 1), 0, lim.wall_time_s)
            self._reserved.tokens += tokens
            self._reserved.cost_usd += cost_usd
            self._reserved.calls += 1
            return Reservation(tokens, cost_usd)

    def record(self, record: dict[str, Any], reservation: Reservation | None = None) -> dict[str, Any]:
        """Write a call's record, count its real use and release its reservation."""
        with self._lock:
            if reservation is not None:
                self._reserved.tokens -= reservation.tokens
                self._reserved.cost_usd -= reservation.cost_usd
                self._reserved.calls -= 1
            record = {**record, "run_elapsed_s": round(self.elapsed_s(), 3)}
            self._used.add(record)
            if self._log is not None:  # one O_APPEND write: a line is never torn by another writer
                with self._log.locked() as fd:
                    os.write(fd, (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode())
            return record


_trackers: dict[Path, BudgetTracker] = {}
_trackers_lock = threading.Lock()


def tracker_for_run(run_dir: Path | None, limits: BudgetLimits) -> BudgetTracker:
    """The run's shared tracker (created, and rebuilt from its log, on first use).
    Without a run directory every client gets its own unlogged tracker."""
    if run_dir is None:
        return BudgetTracker(limits)
    log_path = RunPaths(Path(run_dir)).llm_calls.resolve()
    with _trackers_lock:
        tracker = _trackers.get(log_path)
        if tracker is None:
            tracker = _trackers[log_path] = BudgetTracker(limits, log_path)
        elif limits != BudgetLimits() and limits != tracker.limits:
            tracker.limits = limits  # the latest explicit limits win
        return tracker


def forget_run(run_dir: Path) -> None:
    """Drop a run's cached tracker, so the next client rebuilds it from the log."""
    with _trackers_lock:
        _trackers.pop(RunPaths(Path(run_dir)).llm_calls.resolve(), None)
