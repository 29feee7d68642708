"""The task: what to improve (or reproduce), where, and how it is measured.

Two loaders produce the same `Task`: `load_task_yaml` for our `task.yaml` and
`load_fml_folder` for an FML-bench task folder (`config.json` + `prompt.json`).
`load_task` picks one by looking at the path. Every problem with the input is a
`TaskError` that names the file, the field and the reason.
"""

from __future__ import annotations

import functools
import glob
import json
import math
import re
import shlex
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class TaskError(ValueError):
    """A task file is unusable. The message names file, field and reason."""

    def __init__(self, file: Path | str, field: str, reason: str):
        self.file, self.field, self.reason = str(file), field, reason
        super().__init__(f"{file}: {field}: {reason}")


Direction = Literal["max", "min"]


class MetricSpec(BaseModel):
    """One metric in `final_info.json`: `{dataset: {"means": {"<name>_mean": v}}}`."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    name: str
    direction: Direction = "max"

    @property
    def key(self) -> str:
        """The key under `means`; FML-bench appends `_mean` to the metric name."""
        return self.name if self.name.endswith("_mean") else f"{self.name}_mean"

    @property
    def label(self) -> str:
        return f"{self.dataset}/{self.name}"

    def better(self, a: float, b: float) -> bool:
        """True when `a` is strictly better than `b` in this metric's direction."""
        return a > b if self.direction == "max" else a < b


class Constraint(BaseModel):
    """A bound another metric must respect, e.g. accuracy >= 0.8."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    metric: str
    op: Literal[">=", "<="]
    value: float

    @property
    def key(self) -> str:
        return self.metric if self.metric.endswith("_mean") else f"{self.metric}_mean"

    def holds(self, value: float) -> bool:
        return value >= self.value if self.op == ">=" else value <= self.value

    def describe(self) -> str:
        return f"{self.dataset}/{self.metric} {self.op} {self.value}"


class Budget(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = Field(100, ge=1)
    wall_time_s: float | None = Field(None, gt=0)


class Task(BaseModel):
    """A research task, with every path absolute once loaded.

    `commands` is the command list of one experiment step (validation); they run
    through a shell, in order, inside `working_dir` of the copied repository.
    `preprocess_commands` are the task author's, run before every step with
    protected files writable (FML-bench re-copies its evaluation files there).
    `test_commands` is the hidden final test, run once on the chosen code with
    the `hidden` files present (they are never copied into an agent's workspace).
    A step may create only its metrics file and its `outputs` (aiscientist/integrity.py).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kind: Literal["improve", "reproduce"] = "improve"
    description: str = ""
    paper: Path | None = None
    addendum: Path | None = None
    repository: Path
    editable: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    protected: list[str] = Field(default_factory=list)
    hidden: list[str] = Field(default_factory=list)
    outputs: list[str] | None = Field(None, description="globs of the files a step may create besides its metrics file (None: any file that is not code)")
    setup_commands: list[str] = Field(default_factory=list)
    preprocess_commands: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    postprocess_commands: list[str] = Field(default_factory=list)
    working_dir: str = "."
    metrics_file: str = "final_info.json"
    metric: MetricSpec | None = None
    extra_metrics: list[MetricSpec] = Field(default_factory=list)
    constraints: list[Constraint] = Field(default_factory=list)
    baseline: float | None = None
    target: float | None = None
    test_commands: list[str] = Field(default_factory=list)
    test_metrics_file: str | None = None
    command_timeout_s: float = Field(600.0, gt=0)
    budget: Budget = Field(default_factory=Budget)
    source: Path | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if self.kind == "improve":
            if not self.commands:
                raise ValueError("commands: an improve task needs a non-empty command list")
            if self.metric is None:
                raise ValueError("metric: an improve task must name the metric to optimise")
        for name in ("commands", "setup_commands", "preprocess_commands", "postprocess_commands", "test_commands"):
            if any(not c.strip() for c in getattr(self, name)):
                raise ValueError(f"{name}: empty command in the list")
        for number, name in ((self.baseline, "baseline"), (self.target, "target")):
            if number is not None and not math.isfinite(number):
                raise ValueError(f"{name}: must be a finite number")
        return self

    # ---- derived paths -------------------------------------------------------------

    def metrics_path(self, repo_root: Path, test: bool = False) -> Path:
        """Where the metrics file appears inside a copy of the repository."""
        name = (self.test_metrics_file or self.metrics_file) if test else self.metrics_file
        return repo_root / self.working_dir / name

    def is_protected(self, rel_path: str) -> bool:
        return any(glob_match(rel_path, pattern) for pattern in self.protected)

    def is_hidden(self, rel_path: str) -> bool:
        return any(glob_match(rel_path, pattern) for pattern in self.hidden)

    @property
    def editable_globs(self) -> list[str]:
        """The agent's files: the editable globs; a reproduce task that lists none
        hands its whole repository to the agent (PaperBench's submission)."""
        return self.editable or (["**/*"] if self.kind == "reproduce" else [])

    def is_editable(self, rel_path: str) -> bool:
        return any(glob_match(rel_path, p) for p in self.editable_globs) and not self.is_protected(rel_path)

    def agent_hidden_paths(self) -> list[Path]:
        """Folders an agent's commands must not see: the original repository (it
        holds the hidden test assets) and, for reproduce tasks, the task's own
        folder (it holds the grading rubric)."""
        paths = [self.repository]
        if self.kind == "reproduce" and self.source is not None:
            paths.append(self.source.parent)
        return paths

    def copy_repository(self, dest: Path) -> None:
        """Copy the repository to `dest` without its git history and hidden files."""
        import shutil

        def ignore(folder: str, names: list[str]) -> set[str]:
            rel_folder = Path(folder).relative_to(self.repository)
            return {n for n in names if n == ".git" or self.is_hidden((rel_folder / n).as_posix())}

        shutil.copytree(self.repository, dest, ignore=ignore, symlinks=True)

    def summary(self) -> str:
        """One-screen summary for an agent's prompt."""
        lines = [f"# Task: {self.name} ({self.kind})"]
        if self.metric:
            lines.append(f"Optimise {self.metric.label} ({self.metric.direction}).")
        if self.baseline is not None:
            lines.append(f"Baseline: {self.baseline}" + (f"; target: {self.target}" if self.target is not None else ""))
        lines += [f"Constraint: {c.describe()}" for c in self.constraints]
        lines.append("Editable files: " + ", ".join(self.editable or ["(none)"]))
        if self.protected:
            lines.append("Protected (read-only) files: " + ", ".join(self.protected))
        lines.append("Experiment commands: " + " ; ".join(self.commands or ["(none)"]))
        description = self.description.strip()
        if description:
            lines += ["", description[:2000]]
        return "\n".join(lines)


def glob_match(rel_path: str, pattern: str) -> bool:
    """Glob match on `/`-separated relative paths: `*` stays inside one
    directory, `**` spans any number of them."""
    return _glob_regex(pattern).fullmatch(rel_path) is not None


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for i, segment in enumerate(pattern.split("/")):
        if segment == "**":
            parts.append("(?:[^/]+/)*")
            continue
        body = "".join("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch) for ch in segment)
        parts.append(body + "/")
    regex = "".join(parts)
    regex = regex[: -len("(?:[^/]+/)*")] + ".*" if pattern.endswith("**") else regex.removesuffix("/")
    return re.compile(regex)


def expand_globs(root: Path, patterns: list[str]) -> list[str]:
    """Relative paths of the files under `root` matched by `patterns`."""
    found: set[str] = set()
    for pattern in patterns:
        for match in glob.glob(pattern, root_dir=root, recursive=True):
            if (root / match).is_file():
                found.add(Path(match).as_posix())
    return sorted(found)


# ---- loading ----------------------------------------------------------------------


def load_task(path: str | Path, metric: MetricSpec | None = None) -> Task:
    """Load a `task.yaml` file or an FML-bench task folder."""
    path = Path(path)
    if not path.exists():
        raise TaskError(path, "path", "no such file or folder")
    if path.is_dir():
        if (path / "task.yaml").is_file():
            return load_task_yaml(path / "task.yaml")
        if (path / "config.json").is_file():
            return load_fml_folder(path, metric)
        raise TaskError(path, "path", "folder holds neither task.yaml nor an FML-bench config.json")
    return load_task_yaml(path)


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
        raw["description"] = _read_text(path, "description_file", base / str(raw.pop("description_file")))
    for key in ("repository", "paper", "addendum"):
        if raw.get(key) is not None:
            raw[key] = str((base / str(raw[key])).resolve())
    raw["source"] = str(path)
    task = _validate(path, raw)
    check_files(task, path)
    return task


def _read_text(file: Path, field: str, target: Path) -> str:
    if not target.is_file():
        raise TaskError(file, field, f"file not found: {target}")
    return target.read_text()


def _validate(file: Path, raw: dict[str, Any]) -> Task:
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


def check_files(task: Task, file: Path) -> None:
    """Checks that need only the files on disk (before any setup command runs)."""
    if not task.repository.is_dir():
        raise TaskError(file, "repository", f"folder not found: {task.repository}")
    for key in ("paper", "addendum"):
        value = getattr(task, key)
        if value is not None and not value.is_file():
            raise TaskError(file, key, f"file not found: {value}")
    for pattern in task.editable:
        if not expand_globs(task.repository, [pattern]):
            raise TaskError(file, "editable", f"glob {pattern!r} matches no file in {task.repository}")
        for rel in expand_globs(task.repository, [pattern]):
            if task.is_protected(rel):
                raise TaskError(file, "editable", f"{rel} is both editable and protected")
    for pattern in task.protected:
        if any(glob_match(p, pattern) for p in task.editable):
            raise TaskError(file, "protected", f"{pattern!r} is also listed as editable")


def check_after_setup(task: Task, repo_copy: Path) -> None:
    """Protected files may appear only once setup has copied them in."""
    file = task.source or task.repository
    for pattern in task.protected:
        if not expand_globs(repo_copy, [pattern]):
            raise TaskError(file, "protected", f"{pattern!r} is still missing after the setup commands ran")


# ---- FML-bench task folders --------------------------------------------------------


class MetricSelection(BaseModel):
    """The small yaml (or CLI option) that picks the metric of an FML-bench task."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    metric: str
    direction: Literal["max", "min", "maximize", "minimize"] = "max"

    def spec(self) -> MetricSpec:
        direction: Direction = "min" if self.direction in ("min", "minimize") else "max"
        return MetricSpec(dataset=self.dataset, name=self.metric, direction=direction)


def load_fml_folder(folder: Path, metric: MetricSpec | None = None) -> Task:
    """Load `ml_tasks/<Task>/` of an FML-bench checkout.

    Paths in `config.json` are relative to the FML-bench root (two levels up);
    commands run inside `repo_dir` and reach back with relative paths such as
    `../../../ml_tasks/<Task>/train.py`. Those are rewritten to absolute paths
    here so the commands keep working on a copy of the repository elsewhere.
    """
    folder = Path(folder).resolve()
    config_file = folder / "config.json"
    config = _read_json(config_file)
    prompt = _read_json(folder / "prompt.json") if (folder / "prompt.json").is_file() else {}
    root = folder.parent.parent
    if "repo_dir" not in config:
        raise TaskError(config_file, "repo_dir", "missing")
    repo = (root / config["repo_dir"]).resolve()
    if not repo.is_dir():
        raise TaskError(config_file, "repo_dir", f"folder not found: {repo}")
    if metric is None:
        metric = _fml_metric_selection(folder)

    def commands(key: str, enabled_key: str | None = None) -> list[str]:
        value = config.get(key) or []
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            raise TaskError(config_file, key, "expected a list of command strings")
        if enabled_key is not None and config.get(enabled_key) is False:
            return []
        return [_absolutise(c, repo) for c in value]

    description = "\n\n".join(str(prompt[k]) for k in ("system", "task_description") if prompt.get(k))
    raw: dict[str, Any] = {
        "name": folder.name,
        "description": description,
        "repository": str(repo),
        "editable": _str_list(config_file, config, "target_files"),
        "related": _str_list(config_file, config, "related_files"),
        "protected": _str_list(config_file, config, "read_only_files"),
        "setup_commands": commands("setup_commands"),
        "preprocess_commands": commands("preprocess_commands", "do_preprocess"),
        "commands": commands("execute_commands"),
        "postprocess_commands": commands("postprocess_commands", "do_postprocess"),
        "working_dir": ".",
        "metrics_file": str(Path(config.get("exp_running_dir") or ".") / "final_info.json"),
        "metric": metric.model_dump(),
        "baseline": _fml_baseline(folder, metric),
        "source": str(config_file),
    }
    task = _validate(config_file, raw)
    check_files(task, config_file)
    return task


def _fml_metric_selection(folder: Path) -> MetricSpec:
    for name in ("metric.yaml", "metric.yml"):
        candidate = folder / name
        if candidate.is_file():
            try:
                raw = yaml.safe_load(candidate.read_text())
                return MetricSelection.model_validate(raw).spec()
            except (yaml.YAMLError, ValidationError) as err:
                raise TaskError(candidate, "(file)", f"invalid metric selection: {err}") from None
    raise TaskError(folder, "metric", "no metric chosen: pass --metric DATASET/METRIC[:max|min] or add metric.yaml")


def _fml_baseline(folder: Path, metric: MetricSpec) -> float | None:
    baseline_file = folder / "baseline_results" / "final_info.json"
    if not baseline_file.is_file():
        return None
    from aiscientist.metrics_file import MetricsError, read_metric

    try:
        return read_metric(baseline_file, metric)
    except MetricsError as err:
        raise TaskError(baseline_file, metric.label, str(err)) from None


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise TaskError(path, "(file)", "file not found")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise TaskError(path, "(file)", f"invalid JSON: {err}") from None
    if not isinstance(data, dict):
        raise TaskError(path, "(file)", "expected a JSON object")
    return data


def _str_list(file: Path, config: dict[str, Any], key: str) -> list[str]:
    value = config.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(file, key, "expected a list of strings")
    return value


def _absolutise(command: str, repo: Path) -> str:
    """Rewrite relative path tokens that point outside `repo` to absolute paths."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return command
    changed = False
    for i, token in enumerate(tokens):
        if "/" not in token or token.startswith("/") or "://" in token:
            continue
        target = (repo / token).resolve()
        if target.exists() and not target.is_relative_to(repo):
            tokens[i] = str(target)
            changed = True
    return shlex.join(tokens) if changed else command
