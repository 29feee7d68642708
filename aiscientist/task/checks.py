"""Validation shared by every task loader: errors name file, field and reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aiscientist.task.model import Task, TaskError, expand_globs, glob_match
from aiscientist.task.reach import check_reach


def validate(file: Path, raw: dict[str, Any]) -> Task:
    """`Task.model_validate`, with the first problem reported as a TaskError."""
    try:
        return Task.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(task)"
        reason = first["msg"]
        if first["type"] == "extra_forbidden":
            reason = "unknown field"
        elif first["type"] == "value_error":
            field, _, reason = reason.removeprefix("Value error, ").partition(": ")
            reason = reason or field
        raise TaskError(file, field, reason) from None


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`, or a TaskError saying why not."""
    if not path.is_file():
        raise TaskError(path, "(file)", "file not found")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise TaskError(path, "(file)", f"invalid JSON: {err}") from None
    if not isinstance(data, dict):
        raise TaskError(path, "(file)", "expected a JSON object")
    return data


def check_files(task: Task, file: Path) -> None:
    """Checks that need only the files on disk (before any setup command runs)."""
    if not task.repository.is_dir():
        raise TaskError(file, "repository", f"folder not found: {task.repository}")
    for key in ("paper", "addendum"):
        value = getattr(task, key)
        if value is not None and not value.is_file():
            raise TaskError(file, key, f"file not found: {value}")
    for pattern in task.editable:
        matched = expand_globs(task.repository, [pattern])
        if not matched:
            raise TaskError(file, "editable", f"glob {pattern!r} matches no file in {task.repository}")
        for rel in matched:
            if task.is_protected(rel):
                raise TaskError(file, "editable", f"{rel} is both editable and protected")
    for pattern in task.protected:
        if any(glob_match(p, pattern) for p in task.editable):
            raise TaskError(file, "protected", f"{pattern!r} is also listed as editable")
    _check_scorer(task, file)
    check_reach(task, file)


def _check_scorer(task: Task, file: Path) -> None:
    """The score command may run only files the agent cannot change (docs/contracts.md, "Scoring")."""
    for pattern in task.scorer:
        matched = expand_globs(task.repository, [pattern])
        if not matched:
            raise TaskError(file, "scorer", f"glob {pattern!r} matches no file in {task.repository}")
        for rel in matched:
            if not (task.is_protected(rel) or task.is_hidden(rel)):
                raise TaskError(file, "scorer", f"{rel} is neither protected nor hidden: the agent could change it")
    for pattern in task.test_inputs:
        if not task.is_hidden(pattern):
            raise TaskError(file, "test_inputs", f"{pattern!r} is not under a hidden glob")
    for pattern in task.artifacts:
        if task.is_protected(pattern) or any(glob_match(pattern, p) for p in task.editable_globs):
            raise TaskError(file, "artifacts", f"{pattern!r} names a protected or editable file, not a run's output")


def check_after_setup(task: Task, repo_copy: Path) -> None:
    """Protected files may appear only once setup has copied them in."""
    file = task.source or task.repository
    for pattern in task.protected:
        if not expand_globs(repo_copy, [pattern]):
            raise TaskError(file, "protected", f"{pattern!r} is still missing after the setup commands ran")
