"""The `Task` schema every loader produces (see `aiscientist.task.load`), with the
glob helpers that decide which files are editable, protected or hidden."""

from __future__ import annotations

import functools
import glob
import math
import re
import shutil
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from aiscientist.records.accounting import is_better

TaskKind = Literal["improve", "reproduce"]  # a metric to improve, or a paper to reproduce (graded by a rubric)


class TaskError(ValueError):
    """A task file is unusable. The message names file, field and reason."""

    def __init__(self, file: Path | str, field: str, reason: str):
        self.file, self.field, self.reason = str(file), field, reason
        super().__init__(f"{file}: {field}: {reason}")

    def __reduce__(self):  # crosses process pools intact (the default would call __init__ with the message only)
        return (type(self), (self.file, self.field, self.reason))


Direction = Literal["max", "min"]


def mean_key(metric: str) -> str:
    return metric if metric.endswith("_mean") else f"{metric}_mean"


class MetricChoice(BaseModel):
    """A metric named from outside the task (`--metric DATASET/METRIC[:max|min]`);
    without a direction, the task's own files must supply one."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    name: str
    direction: Direction | None = None


class MetricSpec(MetricChoice):
    """One metric in `final_info.json`: `{dataset: {"means": {"<name>_mean": v}}}`."""

    direction: Direction = "max"

    @property
    def key(self) -> str:
        """The key under `means`; FML-bench appends `_mean` to the metric name."""
        return mean_key(self.name)

    @property
    def label(self) -> str:
        return f"{self.dataset}/{self.name}"

    def better(self, a: float, b: float) -> bool:
        """True when `a` is strictly better than `b` in this metric's direction."""
        return is_better(a, b, self.direction)


class Constraint(BaseModel):
    """A bound another metric must respect, e.g. accuracy >= 0.8."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    metric: str
    op: Literal[">=", "<="]
    value: float

    @property
    def key(self) -> str:
        return mean_key(self.metric)

    def holds(self, value: float) -> bool:
        return value >= self.value if self.op == ">=" else value <= self.value

    def describe(self) -> str:
        return f"{self.dataset}/{self.metric} {self.op} {self.value}"


class ScoreRange(BaseModel):
    """FML-bench's normalisation range of a task's metric: improvement is scored as
    signed gain / |p_best − p_worst|; `p_worst` may be the task's baseline itself."""

    model_config = ConfigDict(extra="forbid")
    p_best: float
    p_worst: float | Literal["baseline"]


class Budget(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = Field(100, ge=1)
    wall_time_s: float | None = Field(None, gt=0)


class TaskSandbox(BaseModel):
    """What the task's commands may get from the host and leave behind (docs/contracts.md,
    "Untrusted code"): host variables passed on purpose, a step's disk quota and the run-wide one
    (experiment/quota.py)."""

    model_config = ConfigDict(extra="forbid")
    pass_env: list[str] = Field(default_factory=list, description="host variables the commands see, by name")
    disk_mb: float = Field(256, gt=0, description="bytes a step may leave in its writable areas beyond the baseline")
    max_files: int = Field(10000, ge=1, description="files a step may leave in its writable areas beyond the baseline")
    run_disk_mb: float = Field(
        2048,
        gt=0,
        description="the run-wide budget for every other area sandboxed code writes: bytes it may leave in the run "
        "folder's writable areas together (the shell tool's, new files of the repository between steps), and in each "
        "copy a sandbox writes (the hidden test's, a score's output, a peer's own folder) beyond what the host laid "
        "there (experiment/quota.py)",
    )
    run_max_files: int = Field(
        50000, ge=1, description="entries the same areas may hold beyond what the host laid there"
    )

    @model_validator(mode="after")
    def _names(self) -> TaskSandbox:
        bad = [n for n in self.pass_env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
        if bad:
            raise ValueError(f"pass_env: not a variable name: {', '.join(map(repr, bad))}")
        return self


class Task(BaseModel):
    """A research task, with every path absolute once loaded.

    `commands` (one experiment step) run in order inside `working_dir` of the copied
    repository; `preprocess_commands` run before every step with protected files
    writable (FML-bench re-copies its evaluation files there); `test_commands` are the
    hidden final test, the only commands that see the `hidden` files. `outputs_dir` is
    emptied before every step so nothing a previous step wrote is credited to this one.
    `outside_paths` (files the commands reach outside the repository) are mounted read-only.

    Run / score split (docs/contracts.md, "Scoring"): when `score` is set, `commands` only
    leave the `artifacts`; `score` (`test_score` for the hidden test) then runs in a fresh
    sandbox invocation that sees only the `scorer` files and the artifacts (read-only), the
    `hidden` files (hidden test only) and an empty output folder (`$SCORE_OUT`) where it
    writes the metrics file. `test_inputs`: hidden files the hidden test's run also sees (only
    for inputs that do not give the labels away); `test_prepare`: commands run like `score`
    (scorer and hidden files, no editable code) whose files in `$PREPARE_OUT` the hidden
    test's run gets instead, e.g. the test features without the seed their labels come from.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    layout: Literal["task.yaml", "fml-legacy", "fml-main"] = "task.yaml"
    kind: TaskKind = "improve"
    description: str = ""
    paper: Path | None = None
    addendum: Path | None = None
    repository: Path
    editable: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    protected: list[str] = Field(default_factory=list)
    hidden: list[str] = Field(default_factory=list)
    outputs: list[str] | None = Field(
        None,
        description="globs of the files a step may create besides its metrics file (None: any file that is not code)",
    )
    setup_commands: list[str] = Field(default_factory=list)
    preprocess_commands: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    postprocess_commands: list[str] = Field(default_factory=list)
    working_dir: str = "."
    metrics_file: str = "final_info.json"
    metric_source: Literal["metrics_file", "stdout"] = Field(
        "metrics_file",
        description="stdout: the metric is the run's last `NAME: number` line (quick mode, never isolated)",
    )
    metric: MetricSpec | None = None
    extra_metrics: list[MetricSpec] = Field(default_factory=list)
    constraints: list[Constraint] = Field(default_factory=list)
    baseline: float | None = None
    baseline_test: float | None = None
    baseline_runs: list[float] = Field(
        default_factory=list, description="the metric of the unchanged code, one value per measurement (the noise)"
    )
    target: float | None = None
    score_range: ScoreRange | None = None
    test_commands: list[str] = Field(default_factory=list)
    artifacts: list[str] = Field(default_factory=list, description="globs of files the run leaves for the scorer")
    scorer: list[str] = Field(default_factory=list, description="globs of the protected files the score command runs")
    score: list[str] = Field(default_factory=list, description="scores the artifacts; writes $SCORE_OUT/<metrics>")
    test_score: list[str] = Field(default_factory=list, description="the hidden test's score commands")
    test_inputs: list[str] = Field(default_factory=list, description="hidden globs the hidden test's run also sees")
    test_prepare: list[str] = Field(
        default_factory=list, description="make the hidden test run's inputs from the hidden files, into $PREPARE_OUT"
    )
    test_metrics_file: str | None = None
    command_timeout_s: float = Field(600.0, gt=0)
    preprocess_timeout_s: float | None = Field(None, gt=0)
    postprocess_timeout_s: float | None = Field(None, gt=0)
    test_timeout_s: float | None = Field(None, gt=0)
    outputs_dir: str | None = None
    outside_paths: list[Path] = Field(default_factory=list)
    conda_env: str | None = None
    budget: Budget = Field(default_factory=Budget)
    sandbox: TaskSandbox = Field(default_factory=TaskSandbox)
    source: Path | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if self.kind == "improve":
            if not self.commands:
                raise ValueError("commands: an improve task needs a non-empty command list")
            if self.metric is None:
                raise ValueError("metric: an improve task must name the metric to optimise")
        names = ("commands", "setup_commands", "preprocess_commands", "postprocess_commands", "test_commands")
        for name in (*names, "score", "test_score", "test_prepare"):
            if any(not c.strip() for c in getattr(self, name)):
                raise ValueError(f"{name}: empty command in the list")
        runs = [(v, "baseline_runs") for v in self.baseline_runs]
        for number, name in ((self.baseline, "baseline"), (self.target, "target"), *runs):
            if number is not None and not math.isfinite(number):
                raise ValueError(f"{name}: must be a finite number")
        if self.score or self.test_score or self.test_prepare:
            _check_split(self)
        if self.metric_source == "stdout" and (self.score or self.constraints):
            raise ValueError(
                "metric_source: stdout reads one metric from the run's output; a task with score or "
                "constraints reads its metrics file"
            )
        return self

    @property
    def metric_direction(self) -> Direction | None:
        """The metric's direction; None for a task without a metric (no step is best)."""
        return self.metric.direction if self.metric else None

    @property
    def score_isolated(self) -> bool:
        """Whether no code the agent can edit shares a process with the scoring."""
        return bool(self.score)

    def metrics_path(self, repo_root: Path, test: bool = False) -> Path:
        """Where the metrics file appears inside a copy of the repository."""
        name = (self.test_metrics_file or self.metrics_file) if test else self.metrics_file
        return repo_root / self.working_dir / name

    def timeout(self, phase: Literal["preprocess", "commands", "postprocess", "test"] = "commands") -> float:
        """Seconds a phase's command list may take (the others default to the step's)."""
        value = {
            "preprocess": self.preprocess_timeout_s,
            "postprocess": self.postprocess_timeout_s,
            "test": self.test_timeout_s,
        }.get(phase)
        return value or self.command_timeout_s

    def is_protected(self, rel_path: str) -> bool:
        return any(glob_match(rel_path, pattern) for pattern in self.protected)

    def is_hidden(self, rel_path: str) -> bool:
        return any(glob_match(rel_path, pattern) for pattern in self.hidden)

    def is_artifact(self, rel_path: str) -> bool:
        return any(glob_match(rel_path, pattern) for pattern in self.artifacts)

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
        if self.score:
            lines.append("Scored afterwards, apart from your code, from " + ", ".join(self.artifacts or ["(none)"]))
        description = self.description.strip()
        if description:
            lines += ["", description[:2000]]
        return "\n".join(lines)


CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".pth", ".sh")


def _check_split(task: Task) -> None:
    if not task.score:
        raise ValueError("score: test_score and test_prepare need score too (the validation steps' scorer)")
    if task.test_commands and not task.test_score:
        raise ValueError("test_score: a task with score and test_commands must say how the hidden test is scored")
    if not task.scorer:
        raise ValueError("scorer: a task with score must list the protected files the score command runs")
    for pattern in task.artifacts:
        if pattern.endswith(CODE_SUFFIXES) or pattern.endswith("*"):
            raise ValueError(f"artifacts: {pattern!r} could match code; name data files (e.g. preds.npz, *.json)")


def glob_match(rel_path: str, pattern: str) -> bool:
    """Glob match on `/`-separated relative paths: `*` stays inside one
    directory, `**` spans any number of them."""
    return _glob_regex(pattern).fullmatch(rel_path) is not None


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for segment in pattern.split("/"):
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
