"""Our own task format: one `task.yaml` whose fields are `Task`'s (paths relative to it)."""

from __future__ import annotations

from pathlib import Path

import yaml

from aiscientist.task.checks import check_files, validate
from aiscientist.task.model import Task, TaskError


def load_task_yaml(path: Path) -> Task:
    path = Path(path).resolve()
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise TaskError(path, "(file)", f"invalid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise TaskError(path, "(file)", "expected a mapping of task fields")
    base = path.parent
    raw = dict(raw)
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
