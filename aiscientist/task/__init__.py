"""Tasks: the schema (`model`), the loaders (`load`: task.yaml, `fml`: FML-bench folders)."""

from aiscientist.task.checks import check_after_setup, check_files
from aiscientist.task.load import load_task
from aiscientist.task.model import (
    Budget,
    Constraint,
    Direction,
    MetricChoice,
    MetricSpec,
    ScoreRange,
    Task,
    TaskError,
    TaskSandbox,
    expand_globs,
    glob_match,
)

__all__ = [
    "Budget",
    "Constraint",
    "Direction",
    "MetricChoice",
    "MetricSpec",
    "ScoreRange",
    "Task",
    "TaskError",
    "TaskSandbox",
    "check_after_setup",
    "check_files",
    "expand_globs",
    "glob_match",
    "load_task",
]
