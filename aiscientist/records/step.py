"""The records an experiment leaves: a step, a metrics reading, the hidden test."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from aiscientist.records.causes import FailureCause
from aiscientist.records.paths import PENDING_RECORD, STEP_RECORD, RunPaths
from aiscientist.util import untrusted
from aiscientist.util.text import escape_surrogates


class StepRecord(BaseModel):
    """`experiments/step_NNNN/step.json` (docs/contracts.md, "Experiment engine")."""

    step: int
    agent: str
    hypothesis: str
    started_at: str
    commands: list[str]
    returncodes: list[int]
    duration_s: float
    timed_out: bool = False
    backend: str
    metric: float | None = None
    metrics: dict[str, float] = {}
    success: bool
    valid: bool = True
    constraint_violated: bool = False
    error: str | None = None
    cause: FailureCause | None = None
    diff_path: str
    code_path: str
    score_isolated: bool | None = None  # False: the code it ran shared a process with scoring (could forge it)
    code_sha256: str = ""  # the editable files it ran (`experiment.repeats.code_digest`)
    repeat_of: int | None = None  # an earlier measured step that ran the same editable files (0: the baseline's)
    tokens: int = 0
    cost: float = 0.0

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

    step: int
    metric: float | None = None
    metrics: dict[str, float] = {}
    success: bool
    error: str | None = None
    duration_s: float
    score_isolated: bool | None = None


def load_steps(paths: RunPaths) -> list[StepRecord]:
    """Every recorded step of a run, in step order."""
    return [StepRecord.model_validate_json(path.read_text()) for path in paths.step_records()]


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
