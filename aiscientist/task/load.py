"""`load_task`: one entry point for every task format, chosen by looking at the path."""

from __future__ import annotations

from pathlib import Path

import yaml

from aiscientist.task.checks import check_files, read_json, validate
from aiscientist.task.fml import load_fml_legacy, load_fml_main
from aiscientist.task.model import MetricChoice, MetricSpec, Task, TaskError


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
    message = "neither an FML-bench main task (val_command) nor a legacy one (execute_commands)"
    raise TaskError(config_file, "(file)", message)


def load_task_yaml(path: Path) -> Task:
    """Our own format: `Task`'s fields, with paths relative to the file."""
    path = Path(path).resolve()
    return parse_task_yaml(path.read_text(), path)


def parse_task_yaml(text: str, path: Path) -> Task:
    """task.yaml's `text` as if read from `path` (which need not exist yet)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise TaskError(path, "(file)", f"invalid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise TaskError(path, "(file)", "expected a mapping of task fields")
    base = path.parent
    if "description_file" in raw:
        target = base / str(raw.pop("description_file"))
        if not target.is_file():
            raise TaskError(path, "description_file", f"file not found: {target}")
        raw["description"] = target.read_text()
    for key in ("repository", "paper", "addendum"):
        if raw.get(key) is not None:
            raw[key] = str((base / str(raw[key])).resolve())
    raw["outside_paths"] = [str((base / str(p)).resolve()) for p in raw.get("outside_paths", [])]
    raw["source"] = str(path)
    task = validate(path, raw)
    check_files(task, path)
    return task
