"""FML-bench's `main` branch (18 tasks with a validation/test split).

`config.json` holds `val_command` and `test_command` (one shell line each, the
evaluation files re-copied inside it), `metric`, `metric_direction`,
`target_files` and `conda_env`; results appear as `results_tmp/val_info.json` and
`results_tmp/test_info.json` in the repository; the dataset comes from the root's
`configs/tasks/*.yaml`; baselines are `baseline_results/{val_info,test_info}.json`.
FML-bench's final test restores the best validation code, re-runs the validation
command (it regenerates checkpoints the test may load) and then the test command;
the hidden test here does the same.

The `cp <task file> <dest>` commands that both command lines start with are the
evaluation files FML-bench re-copies before every run: they become the task's
preprocess commands and their destinations its protected files, so they are in
place, verified and read-only like a legacy task's `read_only_files`.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from aiscientist.task.fml import MAIN_TIMEOUTS, FmlFolder, choose, direction, single
from aiscientist.task.model import MetricChoice, MetricSpec, Task, TaskError

OUTPUTS = "results_tmp"


def load_fml_main(folder: Path, choice: MetricChoice | None = None) -> Task:
    fml = FmlFolder(folder)
    (val_copies, val), (test_copies, test) = (split_copies(fml, _command(fml, key)) for key in ("val_command", "test_command"))
    if val_copies != test_copies:  # not FML-bench's usual shape: keep the lines whole
        val, test = " && ".join([*val_copies, val]), " && ".join([*test_copies, test])
        val_copies = []
    metric = main_metric(fml, choice)
    editable = fml.strings("target_files")
    fields: dict[str, Any] = {
        "preprocess_commands": val_copies,
        "protected": sorted({d for d in (_destination(fml, c) for c in val_copies) if d not in editable}),
        "commands": [val],
        "test_commands": [val, test],
        "metrics_file": f"{OUTPUTS}/val_info.json",
        "test_metrics_file": f"{OUTPUTS}/test_info.json",
        "outputs_dir": OUTPUTS,
        "baseline": fml.baseline("val_info.json", metric),
        "baseline_test": fml.baseline("test_info.json", metric),
        **MAIN_TIMEOUTS,
    }
    return fml.task("fml-main", metric, fields)


def split_copies(fml: FmlFolder, line: str) -> tuple[list[str], str]:
    """The leading `cp SOURCE DEST` parts of an `&&` chain that copy a file from outside
    the repository, and the rest of the line."""
    parts = re.split(r"\s*&&\s*", line)
    copies = []
    for part in parts[:-1]:
        if _destination(fml, part) is None:
            break
        copies.append(part)
    return copies, " && ".join(parts[len(copies) :])


def _destination(fml: FmlFolder, part: str) -> str | None:
    """Where `cp SOURCE DEST` puts an outside file, relative to the repository; None for other commands."""
    try:
        words = shlex.split(part)
    except ValueError:
        return None
    if len(words) != 3 or words[0] != "cp" or not Path(words[1]).is_absolute() or Path(words[1]).resolve().is_relative_to(fml.repo):
        return None
    target = fml.repo / words[2]
    if words[2].endswith("/") or target.is_dir():
        target = target / Path(words[1]).name
    rel = os.path.normpath(target.relative_to(fml.repo)) if target.resolve().is_relative_to(fml.repo) else None
    return None if rel is None or rel.startswith("..") else Path(rel).as_posix()


def _command(fml: FmlFolder, key: str) -> str:
    value = fml.config.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaskError(fml.config_file, key, "expected a non-empty command string")
    return fml.command(value)


def main_metric(fml: FmlFolder, choice: MetricChoice | None) -> MetricSpec:
    name = fml.config.get("metric")
    if name is not None and not isinstance(name, str):
        raise TaskError(fml.config_file, "metric", "expected a metric name")
    stated = direction(fml.config_file, "metric_direction", fml.config.get("metric_direction"))
    if choice is not None and name is not None and choice.name not in (name, name.removesuffix("_mean")):
        stated = None  # the config's direction is for its own metric
    found = fml.selection()
    if found is None:
        return choose(fml.config_file, choice, None, name, stated, {})
    file, metrics = found
    dataset = single(file, "metrics.include_datasets", metrics.get("include_datasets"))
    return choose(file, choice, dataset, name, stated, metrics.get("per_metric_direction") or {})
