"""FML-bench's `legacy` branch (the seed paper's 8 tasks).

`config.json` holds the command lists (`setup_commands`, `preprocess_commands`,
`execute_commands`, `postprocess_commands`), the file roles (`target_files`,
`related_files`, `read_only_files`), `exp_running_dir` (where `final_info.json`
appears) and `conda_env`; the metric is chosen in the root's `configs/*.yaml`
(`metrics.include_datasets`, `include_metrics`, `optimization_direction`,
`per_metric_direction`); the baseline is `baseline_results/final_info.json`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiscientist.task.fml import LEGACY_TIMEOUTS, FmlFolder, choose, direction, single
from aiscientist.task.model import MetricChoice, MetricSpec, Task


def load_fml_legacy(folder: Path, choice: MetricChoice | None = None) -> Task:
    fml = FmlFolder(folder)
    metric = legacy_metric(fml, choice)
    exp_dir = str(fml.config.get("exp_running_dir") or ".").rstrip("/") or "."
    fields: dict[str, Any] = {
        "protected": fml.strings("read_only_files"),
        "setup_commands": fml.commands("setup_commands"),
        "preprocess_commands": fml.commands("preprocess_commands", "do_preprocess"),
        "commands": fml.commands("execute_commands"),
        "postprocess_commands": fml.commands("postprocess_commands", "do_postprocess"),
        "metrics_file": f"{exp_dir}/final_info.json",
        "outputs_dir": None if exp_dir == "." else exp_dir,
        "baseline": fml.baseline("final_info.json", metric),
        **LEGACY_TIMEOUTS,
    }
    return fml.task("fml-legacy", metric, fields)


def legacy_metric(fml: FmlFolder, choice: MetricChoice | None) -> MetricSpec:
    found = fml.selection()
    if found is None:
        return choose(fml.folder, choice, None, None, None, {})
    file, metrics = found
    directions = metrics.get("per_metric_direction") or {}
    overall = direction(file, "metrics.optimization_direction", metrics.get("optimization_direction"))
    dataset = single(file, "metrics.include_datasets", metrics.get("include_datasets"))
    name = single(file, "metrics.include_metrics", metrics.get("include_metrics"))
    return choose(file, choice, dataset, name, overall, directions)
