"""FML-bench's `main` branch (18 tasks with a validation/test split).

`config.json` holds `val_command` and `test_command` (one shell line each, the
evaluation files re-copied inside it), `metric`, `metric_direction`,
`target_files` and `conda_env`; results appear as `results_tmp/val_info.json` and
`results_tmp/test_info.json` in the repository; the dataset comes from the root's
`configs/tasks/*.yaml`; baselines are `baseline_results/{val_info,test_info}.json`.
FML-bench's final test restores the best validation code, re-runs the validation
command (it regenerates checkpoints the test may load) and then the test command;
the hidden test here does the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiscientist.task.fml import MAIN_TIMEOUTS, FmlFolder, choose, direction, single
from aiscientist.task.model import MetricChoice, MetricSpec, Task, TaskError

OUTPUTS = "results_tmp"


def load_fml_main(folder: Path, choice: MetricChoice | None = None) -> Task:
    fml = FmlFolder(folder)
    val, test = (_command(fml, key) for key in ("val_command", "test_command"))
    metric = main_metric(fml, choice)
    fields: dict[str, Any] = {
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
