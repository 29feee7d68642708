"""`load_task`: one entry point for every task format, chosen by looking at the path."""

from __future__ import annotations

from pathlib import Path

from aiscientist.task.checks import read_json
from aiscientist.task.fml_legacy import load_fml_legacy
from aiscientist.task.fml_main import load_fml_main
from aiscientist.task.model import MetricChoice, MetricSpec, Task, TaskError
from aiscientist.task.yaml_format import load_task_yaml


def load_task(path: str | Path, metric: MetricChoice | MetricSpec | None = None) -> Task:
    """A `task.yaml` (or a folder holding one), or an FML-bench task folder of either
    branch: `main` when its config.json has `val_command`, `legacy` when it has
    `execute_commands`. `metric` overrides an FML-bench task's metric selection."""
    path = Path(path)
    if not path.exists():
        raise TaskError(path, "path", "no such file or folder")
    if not path.is_dir():
        return load_task_yaml(path)
    if (path / "task.yaml").is_file():
        return load_task_yaml(path / "task.yaml")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise TaskError(path, "path", "folder holds neither task.yaml nor an FML-bench config.json")
    choice = MetricChoice.model_validate(metric.model_dump()) if metric is not None else None
    config = read_json(config_file)
    if "val_command" in config:
        return load_fml_main(path, choice)
    if "execute_commands" in config:
        return load_fml_legacy(path, choice)
    raise TaskError(config_file, "(file)", "neither an FML-bench main task (val_command) nor a legacy one (execute_commands)")
