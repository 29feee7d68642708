"""The records an experiment leaves: a step, a metrics reading, the hidden test."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from aiscientist.records.causes import FailureCause
from aiscientist.records.paths import PENDING_RECORD, STEP_RECORD, RunPaths
from aiscientist.util import untrusted
from aiscientist.util.text import escape_surrogates

HYPOTHESIS_CHARS = 4000  # a step's hypothesis as recorded (a model's or a peer's words, untrusted)


def capped_hypothesis(text: str) -> str:
    """`text` cut to HYPOTHESIS_CHARS, saying how much was left out."""
    if len(text) <= HYPOTHESIS_CHARS:
        return text
    return text[:HYPOTHESIS_CHARS] + f" [... {len(text) - HYPOTHESIS_CHARS:,} characters left out]"


class StepRecord(BaseModel):
    """`experiments/step_NNNN/step.json` (docs/contracts.md, "Experiment engine")."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    step: int
    """The step's number (1-based; its folder is `step_NNNN`)."""
    agent: str
    """The agent or role that ran it."""
    hypothesis: str
    """What the step was meant to test."""
    started_at: str
    """When it started (ISO 8601, UTC)."""
    commands: list[str]
    """The commands it ran: the task's, then the score's."""
    returncodes: list[int]
    """Each command's exit code."""
    duration_s: float
    """Wall-clock seconds of its commands."""
    timed_out: bool = False
    """Whether a command ran out of time."""
    backend: str
    """The sandbox backend that ran it."""
    metric: float | None = None
    """The target metric it read; None when it read none."""
    metrics: dict[str, float] = {}
    """Every metric of its metrics file (`dataset/key`)."""
    success: bool
    """Whether it produced a finite target metric."""
    valid: bool = True
    """False when protected files were changed or an integrity check failed."""
    constraint_violated: bool = False
    """The task's own flag that the run broke a constraint."""
    error: str | None = None
    """Why it failed, in words."""
    cause: FailureCause | None = None
    """Why it failed, as a class (`records.causes`)."""
    diff_path: str
    """Its diff against the baseline, relative to the run folder."""
    code_path: str
    """The editable files it ran, relative to the run folder."""
    score_isolated: bool | None = None
    """False: the code it ran shared a process with scoring (could forge it)."""
    code_sha256: str = ""
    """The editable files it ran (`experiment.repeats.code_digest`)."""
    repeat_of: int | None = None
    """An earlier measured step that ran the same editable files (0: the baseline's)."""
    tokens: int = 0
    """Model tokens charged to it."""
    cost: float = 0.0
    """Model cost charged to it, US dollars."""
    peak_memory_mb: float | None = None
    """Its commands' peak memory: processes, tmpfs and shared memory (None: not measured)."""

    @property
    def eligible(self) -> bool:
        """Whether this step may count as the run's best."""
        return self.success and self.valid and not self.constraint_violated


@dataclass
class MetricsReading:
    """What a metrics file gave: the target metric and all metrics, or why not."""

    metric: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    cause: FailureCause | None = None
    constraint_violated: bool = False


class TestResult(BaseModel):
    """The hidden test, run once on one step's code."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    step: int
    """The step whose code it ran."""
    metric: float | None = None
    """The target metric it read."""
    metrics: dict[str, float] = {}
    """Every metric it read."""
    success: bool
    """Whether it produced a finite target metric."""
    error: str | None = None
    """Why it failed, in words."""
    cause: FailureCause | None = None
    """Why it failed, by class, where one is known (`disk quota`)."""
    duration_s: float
    """Wall-clock seconds it took."""
    score_isolated: bool | None = None
    """False: the code shared a process with scoring."""


def load_steps(paths: RunPaths) -> list[StepRecord]:
    """Every recorded step of a run, in step order."""
    return [StepRecord.model_validate_json(path.read_text()) for path in paths.step_records()]


class StepLog:
    """Every recorded step of a run, read incrementally: asked for once or more per step, it
    costs the same at step 1,000 as at step 1. Step folders are numbered 1, 2, ... (a crashed
    attempt's number is reused), so only folders from the oldest step whose record may still
    change are looked at. A record changes only while its step runs or right after (the
    watcher may mark it invalid): all but the two newest are final; those two are read again
    when their file changed. An unreadable record is left out, as a missing one is. Not
    thread-safe: its owner holds a lock around `records`."""

    def __init__(self, paths: RunPaths):
        self.paths = paths
        self.final: list[StepRecord] = []  # records of steps before `_open`, which no longer change
        self._open = 1  # the oldest step whose record may still change
        self._recent: dict[int, tuple[tuple[int, int, int], StepRecord | None]] = {}  # step -> (stamp, record)
        self._paths: dict[int, str] = {}  # step -> its record's path, spelled once

    def records(self) -> list[StepRecord]:
        fresh: list[tuple[int, StepRecord | None]] = []
        step = self._open
        while True:
            path = self._paths.get(step) or self._paths.setdefault(step, str(self.paths.step_record(step)))
            try:
                info = os.stat(path)
            except FileNotFoundError:
                break  # not started, or running
            stamp = (
                info.st_ino,
                info.st_size,
                info.st_mtime_ns,
            )  # a rewrite in the same clock tick changes size or inode
            cached = self._recent.get(step)
            if cached is None or cached[0] != stamp:
                try:
                    cached = self._recent[step] = (stamp, StepRecord.model_validate_json(Path(path).read_text()))
                except (OSError, ValueError):
                    cached = (stamp, None)
            fresh.append((step, cached[1]))
            step += 1
        while len(fresh) > 2:
            done, record = fresh.pop(0)
            self.final += [record] if record is not None else []
            self._recent.pop(done, None)
            self._paths.pop(done, None)
            self._open = done + 1
        return [*self.final, *(r for _, r in fresh if r is not None)]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folder_hashes(step_dir: Path) -> dict[str, str]:
    """sha256 of every file of a step folder by relative path; the pending record
    counts as `step.json` (its end event is written before it is renamed). Walked
    without following links; an undecodable byte in a name is written `\\udcNN`, as
    the event log writes it, so the hashes compare equal after a round trip."""
    hashes = {}
    walker = untrusted.TreeWalk(step_dir)
    for node, parent in walker:
        if node.kind != "file":
            continue
        try:
            digest = walker.digest(parent, node)
        except untrusted.Unreadable:
            continue
        rel = escape_surrogates(node.rel)
        hashes[STEP_RECORD if rel == PENDING_RECORD else rel] = digest
    for skipped in walker.skipped:
        hashes[escape_surrogates(skipped.rel)] = f"not read: {skipped.reason}"
    return dict(sorted(hashes.items()))
