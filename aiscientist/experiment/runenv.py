"""How a task's commands run, beyond the sandbox: its conda environment, its
outputs folder emptied before each step, and the outside paths it may read.

`conda_env` (FML-bench's tasks name one): with `AISCIENTIST_CONDA=auto` (the
default) every command runs through `conda run -n ENV` when conda is installed,
and a task that names an environment fails with a clear error when it is not;
`AISCIENTIST_CONDA=current` runs the commands in the current environment instead.
`conda_env: base` (conda's default environment, i.e. what the user already runs) without
conda runs in the current environment, with a one-line notice.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
from functools import cache
from pathlib import Path

from aiscientist.task import Task, TaskError
from aiscientist.util import untrusted

CONDA_SETTING = "AISCIENTIST_CONDA"
log = logging.getLogger(__name__)


@cache
def _notice_base_without_conda() -> None:
    log.warning(
        "the task names conda's 'base' environment and conda is not installed: its commands run in the current "
        "environment"
    )


def conda_command(task: Task) -> list[str] | None:
    """The `conda run` prefix for `task`'s commands; None when they run as they are.
    Raises TaskError when the task needs conda and conda is missing."""
    if not task.conda_env:
        return None
    setting = os.environ.get(CONDA_SETTING, "auto")
    if setting == "current":
        return None
    if setting != "auto":
        raise TaskError(CONDA_SETTING, "environment", f"expected auto or current, got {setting!r}")
    conda = shutil.which("conda")
    if conda is None and task.conda_env == "base":
        _notice_base_without_conda()
        return None
    if conda is None:
        raise TaskError(
            task.source or task.repository,
            "conda_env",
            f"the task runs in the conda environment {task.conda_env!r} but conda is not installed; "
            f"install conda and create it, or set {CONDA_SETTING}=current to run in the current environment",
        )
    return [conda, "run", "--no-capture-output", "-n", task.conda_env, "bash", "-c"]


def in_environment(task: Task, commands: list[str]) -> list[str]:
    prefix = conda_command(task)
    return commands if prefix is None else [shlex.join([*prefix, command]) for command in commands]


def clean_outputs(task: Task, repo: Path) -> None:
    """Empty the task's outputs folder and remove its metrics files in `repo`, so a
    step is credited only with what it wrote itself. Whatever is there (a folder of any
    depth, a link, a FIFO) is removed without following links on the way."""
    targets = [repo / task.working_dir / task.outputs_dir] if task.outputs_dir else []
    targets += [task.metrics_path(repo, test=test) for test in (False, True)]
    for target in targets:
        try:
            untrusted.remove_tree(repo, target.relative_to(repo).as_posix())
        except untrusted.Unreadable:
            continue  # a path that leaves the repository: never the step's to remove


def readable_outside(task: Task) -> list[Path]:
    """What the sandbox mounts read-only besides the repository: the task's outside
    paths that exist and, when commands run through conda, its installation (envs included)."""
    paths = [p for p in task.outside_paths if p.exists()]
    prefix = conda_command(task)
    if prefix is not None:
        paths.append(Path(prefix[0]).resolve().parents[1])  # <conda>/bin/conda -> <conda>
    return paths
