"""Repeats: a step whose editable files are byte-identical to those of an earlier measured
step (or to the baseline's) is not a new experiment. The engine records it with
`repeat_of` (the earlier step's number; 0 for the baseline's code) and it never counts as
progress (`records.accounting.best_step` passes over it). A measured step is one that gave
an eligible metric: running again the code of a step that failed is a retry, not a repeat.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping

from aiscientist.experiment.integrity import Entry
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import StepRecord
from aiscientist.task import Task

BASELINE_CODE = 0  # `repeat_of` of a step that ran the baseline's editable files


def code_digest(task: Task, tree: Mapping[str, Entry]) -> str:
    """sha256 of the editable files of a tree (`integrity.scan`): their paths and contents."""
    code = sorted((rel, entry.to_json()) for rel, entry in tree.items() if task.is_editable(rel))
    return hashlib.sha256(json.dumps(code).encode()).hexdigest()


class Repeats:
    """Which measured step first ran each version of the editable files. Read from the step
    records once, then kept up to date by `add`, so a step costs the same at 1,000 as at 1."""

    def __init__(self, task: Task, paths: RunPaths, baseline_tree: Callable[[], dict[str, Entry]]):
        self.task, self.paths, self._baseline_tree = task, paths, baseline_tree
        self._first: dict[str, int] | None = None

    def find(self, digest: str) -> int | None:
        """The measured step that ran `digest` first (BASELINE_CODE for the baseline's code), or None."""
        if self._first is None:
            baseline = self._baseline_tree()  # empty for run folders made before the tree was kept
            self._first = {code_digest(self.task, baseline): BASELINE_CODE} if baseline else {}
            for path in self.paths.step_records():
                self.add(StepRecord.model_validate_json(path.read_text()))
        return self._first.get(digest)

    def add(self, record: StepRecord) -> None:
        if self._first is not None and record.code_sha256 and record.eligible and record.metric is not None:
            self._first.setdefault(record.code_sha256, record.step)
