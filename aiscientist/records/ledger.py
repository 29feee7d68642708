"""`results.tsv`: the run's ledger, one tab-separated row per step, appended as each step ends
(so `tail -f` and `sort` work on a running run). The step records stay the truth; the ledger is
their plain view: step, status, metric, best-so-far, wall time, tokens, the hypothesis on one
cleaned line and the snapshot id (the first 12 hex digits of the step's `code_sha256`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from aiscientist.records import accounting
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import StepRecord
from aiscientist.util.text import clean

Status = Literal["improved", "kept", "failed", "invalid", "repeat"]
COLUMNS = ("step", "status", "metric", "best_so_far", "wall_s", "tokens", "hypothesis", "snapshot")
HYPOTHESIS_CHARS = 200


def status(step: StepRecord, best_before: float | None, best_after: float | None) -> Status:
    """invalid (tampered, broke the tree or a constraint) > failed > repeat > improved > kept."""
    if not step.valid or step.constraint_violated:
        return "invalid"
    if not accounting.successful(step):
        return "failed"
    if step.repeat_of is not None:
        return "repeat"
    return "improved" if best_after != best_before else "kept"


def _value(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def rows(
    steps: Sequence[StepRecord], direction: accounting.Direction | None, baseline: float | None = None, start: int = 0
) -> list[list[str]]:
    """Every step's row from the `start`-th on, in step order (no best-so-far when the task names no metric). With
    the task's `baseline` the best so far starts there: a step worse than the unchanged code is not "improved"."""
    ordered = sorted(steps, key=lambda s: s.step)
    curve = accounting.best_so_far(ordered, direction) if direction else [None] * len(ordered)
    before = baseline if direction else None
    if before is not None:
        curve = [before if b is None or not accounting.is_better(b, before, direction) else b for b in curve]
    if start > 0:
        before = curve[start - 1] if start <= len(curve) else None
    table = []
    for step, best in zip(ordered[start:], curve[start:]):
        hypothesis = clean(" ".join(step.hypothesis.split()), HYPOTHESIS_CHARS).replace("\t", " ")
        table.append(
            [
                str(step.step),
                status(step, before, best),
                _value(step.metric),
                _value(best),
                f"{step.duration_s:.1f}",
                str(step.tokens),
                hypothesis,
                step.code_sha256[:12],
            ]
        )
        before = best
    return table


def _line(row: Sequence[str]) -> str:
    return "\t".join(row) + "\n"


def append(
    paths: RunPaths, steps: Sequence[StepRecord], direction: accounting.Direction | None, baseline: float | None = None
) -> None:
    """Append the rows of `steps` the ledger lacks (normally the last one; all of them for a run
    folder made before the ledger, or one stopped between its step record and its row)."""
    path = paths.ledger
    have = max(len(path.read_text().splitlines()) - 1, 0) if path.is_file() else 0
    with path.open("a") as out:
        if not out.tell():
            out.write(_line(COLUMNS))
        out.writelines(_line(row) for row in rows(steps, direction, baseline, start=have))


def read(paths: RunPaths) -> list[dict[str, str]]:
    """The ledger's rows as {column: value} (empty when there is none)."""
    if not paths.ledger.is_file():
        return []
    lines = paths.ledger.read_text().splitlines()
    return [dict(zip(COLUMNS, line.split("\t"))) for line in lines[1:]]
