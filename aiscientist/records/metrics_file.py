"""Read FML-bench's `final_info.json`:
`{dataset: {"means": {"<metric>_mean": v}, "stderrs": {...}, "final_info_dict": {...}}}`,
or (a task's quick mode, `metric_source: stdout`) the last `NAME: number` line of a run's output."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from aiscientist.records.causes import FailureCause
from aiscientist.util import untrusted
from aiscientist.util.text import clean

MAX_BYTES = 10 << 20


class MetricsError(ValueError):
    """The metrics file is missing, malformed or lacks a finite value."""

    def __init__(self, message: str, cause: FailureCause = FailureCause.METRICS_FILE_INVALID):
        super().__init__(message)
        self.cause = cause


def load(path: Path, root: Path | None = None) -> Any:
    """The parsed metrics file, read as untrusted data: never through a link (below
    `root`, default the file's folder), at most MAX_BYTES, nested at most JSON_DEPTH."""
    root = Path(root) if root is not None else path.parent
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        raise MetricsError(f"metrics file {path} is outside {root}") from None
    try:
        data = untrusted.read_file(root, rel, MAX_BYTES)
    except untrusted.Unreadable as err:
        if err.reason == "missing":
            raise MetricsError(f"metrics file {path.name} was not written", FailureCause.METRICS_FILE_MISSING) from None
        cause = FailureCause.INTEGRITY if "link" in err.reason else FailureCause.METRICS_FILE_INVALID
        raise MetricsError(f"metrics file {clean(rel)} not read: {err.reason}", cause) from None
    try:
        return untrusted.loads_json(data)
    except (ValueError, UnicodeDecodeError) as err:
        raise MetricsError(f"{path.name} is not valid JSON: {clean(err, 300)}") from None


def load_means(path: Path, root: Path | None = None) -> dict[str, dict[str, Any]]:
    """`{dataset: {key: value}}` from the `means` of every dataset in the file."""
    data = load(path, root)
    if not isinstance(data, dict):
        raise MetricsError(f"{path.name}: expected an object of datasets, got {type(data).__name__}")
    means: dict[str, dict[str, Any]] = {}
    for dataset, block in data.items():
        if not isinstance(block, dict) or not isinstance(block.get("means"), dict):
            raise MetricsError(
                f"{path.name}: dataset {clean(dataset, 80)!r} has no 'means' object"
                " (expected {dataset: {'means': {...}}})"
            )
        means[dataset] = block["means"]
    return means


def pick(means: dict[str, dict[str, Any]], dataset: str, key: str) -> float:
    """The finite float at `means[dataset][key]`, or a MetricsError saying why not."""
    if dataset not in means:
        raise MetricsError(
            f"dataset {dataset!r} missing from metrics (found: {sorted(means) or 'none'})", FailureCause.METRIC_MISSING
        )
    block = means[dataset]
    if key not in block:
        raise MetricsError(
            f"metric {key!r} missing from {dataset!r} (found: {sorted(block) or 'none'})", FailureCause.METRIC_MISSING
        )
    value = block[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricsError(f"metric {dataset}/{key} is not a number: {value!r}", FailureCause.METRIC_NOT_NUMBER)
    if not math.isfinite(value):
        raise MetricsError(f"metric {dataset}/{key} is not finite: {value}", FailureCause.METRIC_NOT_NUMBER)
    return float(value)


def stdout_metric(text: str, name: str) -> float:
    """The value of the last `NAME: number` or `NAME=number` in a run's output (the name
    at a line's start or after a space, `,`, `;` or `|`), or a MetricsError saying why not."""
    pattern = re.compile(rf"(?:^|[\s,;|])({re.escape(name)})\s*[:=][ \t]*([^\s,;|]*)", re.MULTILINE)
    found = pattern.findall(text)
    if not found:
        raise MetricsError(
            f"no line '{name}: number' (or '{name}=number') in the run's output", FailureCause.METRIC_MISSING
        )
    value = found[-1][1]
    try:
        number = float(value)
    except ValueError:
        raise MetricsError(
            f"metric {name} in the run's output is not a number: {clean(value, 80)!r}", FailureCause.METRIC_NOT_NUMBER
        ) from None
    if not math.isfinite(number):
        raise MetricsError(f"metric {name} in the run's output is not finite: {value}", FailureCause.METRIC_NOT_NUMBER)
    return number


def read_metric(path: Path, dataset: str, key: str) -> float:
    return pick(load_means(path), dataset, key)


def constraint_flagged(path: Path, root: Path | None = None) -> bool:
    """FML-bench's own flag: `constraint_violated: true` in a dataset's `means` or
    `final_info_dict` means the run broke a task constraint."""
    try:
        data = load(path, root)
    except MetricsError:
        return False
    blocks = data.values() if isinstance(data, dict) else []
    return any(
        isinstance(b, dict) and isinstance(b.get(s), dict) and b[s].get("constraint_violated") is True
        for b in blocks
        for s in ("means", "final_info_dict")
    )


def flatten(means: dict[str, dict[str, Any]]) -> dict[str, float]:
    """`{"dataset/key": value}` for every finite numeric mean (for records)."""
    flat: dict[str, float] = {}
    for dataset, block in means.items():
        for key, value in block.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                flat[f"{dataset}/{key}"] = float(value)
    return flat
