"""Scoring in a sandbox invocation of its own (docs/contracts.md, "Scoring").

A task with a run / score split runs its `commands` (editable code) first; they leave
the declared `artifacts`. Once every process of that run is dead, the `score` commands
run in a fresh invocation over a folder made on the host for them alone: the protected
`scorer` files (from the verified pristine copies), copies of the artifacts (read
no-follow from the run's tree, read-only there), the `hidden` files for the hidden test
only, and an empty output folder (`$SCORE_OUT`), the one writable place. The metrics
file is read from that folder (held to the run-wide disk quota), never from the submission; nothing the run left is
importable there, so no hook or patch of the run's can reach the scorer's interpreter. The folder
lives in memory (`untrusted.MEMORY_DIR`) when what is laid out in it is small (`IN_MEMORY_BYTES`):
a step's scoring then makes no file on disk.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol

from aiscientist.experiment import integrity, quota
from aiscientist.experiment.runenv import in_environment, readable_outside
from aiscientist.records.causes import FailureCause
from aiscientist.records.metrics_file import (
    MetricsError,
    constraint_flagged,
    flatten,
    load_means,
    pick,
    stdout_metric,
)
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import MetricsReading
from aiscientist.sandbox import CommandsResult, Sandbox
from aiscientist.task import Task, expand_globs
from aiscientist.util import untrusted
from aiscientist.util.text import name as shown

SCORE_OUT = "SCORE_OUT"  # the environment variable naming the score command's output folder
PREPARE_OUT = "PREPARE_OUT"  # ... and the test_prepare commands' one
ARTIFACT_LIMIT = 2 << 30  # bytes of artifacts one score invocation gets
IN_MEMORY_BYTES = 32 << 20  # scorer, hidden and artifact bytes up to which the scoring folder is made in memory


class Scorer(Protocol):
    """What scoring needs of the experiment engine."""

    task: Task
    paths: RunPaths
    sandbox: Sandbox
    env: dict[str, str]

    def read_metrics(self, metrics_path: Path, stdout: str = "") -> MetricsReading: ...


class ArtifactError(Exception):
    pass


def copy_artifacts(task: Task, tree: dict[str, integrity.Entry], run_root: Path, dest: Path) -> list[str]:
    """Copy the artifacts `tree` (a scan of `run_root`) lists into `dest`, each read
    without following links; return their relative paths. A matching entry that is not
    a regular file, too many bytes, or one where `dest` already holds a task file (laid
    out first: an artifact never stands in for a scorer or hidden file) is an ArtifactError."""
    copied, total = [], 0
    for rel, entry in sorted(tree.items()):
        if not task.is_artifact(rel):
            continue
        if entry.kind != "file":
            raise ArtifactError(f"artifact {shown(rel)!r} is not a regular file the host may read")
        try:
            data = untrusted.read_file(run_root, rel, integrity.READ_LIMIT, hard_links=True)
        except untrusted.Unreadable as err:
            raise ArtifactError(f"artifact {shown(rel)!r} not read: {err.reason}") from None
        total += len(data)
        if total > ARTIFACT_LIMIT:
            raise ArtifactError(f"the artifacts exceed {ARTIFACT_LIMIT >> 20} MB")
        target = dest / rel
        try:
            if target.exists():
                raise FileExistsError(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):  # the task's files are laid out first and win
            raise ArtifactError(f"artifact {shown(rel)!r} would stand in for a scorer or hidden file") from None
        target.write_bytes(data)
        target.chmod(0o444)
        copied.append(rel)
    return copied


def _task_files(engine: Scorer, test: bool) -> list[tuple[str, Path]]:
    """(relative path, source) of the scorer files: protected ones from the pristine copies,
    hidden ones (the hidden test only) from the original repository."""
    task, pristine = engine.task, engine.paths.pristine_files
    files = []
    for rel in expand_globs(task.repository, task.scorer):
        if task.is_hidden(rel):
            continue  # below, for the hidden test only
        source = pristine / rel
        if not source.is_file():
            source = task.repository / rel  # a protected file setup did not copy (run folders made before)
        files.append((rel, source))
    if test:
        files += [(rel, task.repository / rel) for rel in expand_globs(task.repository, task.hidden)]
    return files


def _lay_out(files: list[tuple[str, Path]], repo: Path) -> None:
    for rel, source in files:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, repo / rel)


def _bytes_to_score(task: Task, files: list[tuple[str, Path]], run_root: Path, tree: dict[str, integrity.Entry]) -> int:
    """About how many bytes a scoring folder will hold: the task files' and the artifacts' sizes
    (`tree` came from a no-follow walk of the run's quiet tree, so no link lies on their way)."""
    paths = [source for _, source in files]
    paths += [run_root / rel for rel, entry in tree.items() if entry.kind == "file" and task.is_artifact(rel)]
    total = 0
    for path in paths:
        try:
            total += os.lstat(path).st_size
        except OSError:
            continue  # gone: the copy says why
    return total


def score_run(
    engine: Scorer, run_root: Path, tree: dict[str, integrity.Entry], test: bool = False
) -> tuple[CommandsResult, MetricsReading]:
    """Run the task's score (or test_score) commands on the artifacts the run at
    `run_root` left; the result of that invocation and the metrics it wrote."""
    task = engine.task
    commands = task.test_score if test else task.score
    files = _task_files(engine, test)
    small = _bytes_to_score(task, files, run_root, tree) <= IN_MEMORY_BYTES
    with untrusted.scratch_folder("aisci-score-", in_memory=small) as tmp:
        repo, out = tmp / "repo", tmp / "out"
        repo.mkdir()
        out.mkdir()
        _lay_out(files, repo)
        try:
            copy_artifacts(task, tree, run_root, repo)
        except ArtifactError as err:
            failed = CommandsResult(commands=commands, returncodes=[], duration_s=0.0, backend=engine.sandbox.name)
            return failed, MetricsReading(error=str(err), cause=FailureCause.INTEGRITY)
        result = _apart(engine, repo, out, commands, SCORE_OUT, task.timeout("test" if test else "commands"))
        over, _ = quota.enforce_areas(task.sandbox, [quota.WritableArea("the score's output folder", out)])
        if over:
            return result, MetricsReading(error=over, cause=FailureCause.DISK_QUOTA)
        if not result.ok:
            return result, MetricsReading(error=result.failure(), cause=result.failure_cause())
        name = Path((task.test_metrics_file or task.metrics_file) if test else task.metrics_file).name
        return result, engine.read_metrics(out / name)


def _apart(engine: Scorer, repo: Path, out: Path, commands: list[str], out_name: str, timeout: float) -> CommandsResult:
    """`commands` in a fresh invocation over `repo` (read-only), writing only to `out`
    (named by the variable `out_name`); the run folder and the task repository unseen."""
    task = engine.task
    cwd = repo / task.working_dir
    cwd.mkdir(parents=True, exist_ok=True)
    return engine.sandbox.run(
        in_environment(task, commands),
        cwd=cwd,
        timeout=timeout,
        env={"MPLBACKEND": "Agg", **engine.env, out_name: str(out)},
        writable=[out],
        readonly=[repo, *readable_outside(task)],
        hidden=[engine.paths.root, task.repository],
    )


def prepare_test_inputs(engine: Scorer, dest: Path) -> CommandsResult:
    """Run the task's `test_prepare` commands apart from any editable code, over the scorer
    and hidden files, and lay the files they write into `$PREPARE_OUT` into `dest` (the
    hidden test's copy): the test run sees those inputs, never the hidden files they came from."""
    task = engine.task
    with untrusted.scratch_folder("aisci-prepare-") as tmp:
        repo, out = tmp / "repo", tmp / "out"
        repo.mkdir()
        out.mkdir()
        _lay_out(_task_files(engine, test=True), repo)
        result = _apart(engine, repo, out, task.test_prepare, PREPARE_OUT, task.timeout("test"))
        if not result.ok:
            return result
        walker = untrusted.TreeWalk(out)
        for node, parent in walker:
            if node.kind == "file":
                untrusted.remove_tree(dest, node.rel)
                untrusted.write_file(dest, node.rel, walker.read(parent, node, integrity.READ_LIMIT))
    return result


def survivors_error(result: CommandsResult) -> str | None:
    """Why scoring may not start after `result`: processes of the run still alive."""
    left = result.survivors
    return f"{left} process(es) of the run survived it; not scored" if left else None


__all__ = [
    "PREPARE_OUT",
    "SCORE_OUT",
    "ArtifactError",
    "copy_artifacts",
    "prepare_test_inputs",
    "score_run",
    "survivors_error",
]


def read_metrics(task: Task, paths: RunPaths, metrics_path: Path, stdout: str = "") -> MetricsReading:
    """The target metric, all metrics and the constraints' verdict from a metrics file (or,
    `metric_source: stdout`, from the run's output `stdout`)."""
    if task.metric is None:
        return MetricsReading(error="the task names no metric", cause=FailureCause.METRIC_MISSING)
    if task.metric_source == "stdout":
        try:
            value = stdout_metric(stdout, task.metric.name)
        except MetricsError as err:
            return MetricsReading(error=str(err), cause=err.cause)
        return MetricsReading(metric=value, metrics={task.metric.label: value})
    # never through a link below the repository (a copy's: below the file's own folder)
    root = paths.submission if metrics_path.is_relative_to(paths.submission) else None
    try:
        means = load_means(metrics_path, root)
        metric = pick(means, task.metric.dataset, task.metric.key)
    except MetricsError as err:
        return MetricsReading(error=str(err), cause=err.cause)
    violated = False
    for constraint in task.constraints:
        try:
            violated |= not constraint.holds(pick(means, constraint.dataset, constraint.key))
        except MetricsError:
            violated = True
    return MetricsReading(
        metric=metric, metrics=flatten(means), constraint_violated=violated or constraint_flagged(metrics_path, root)
    )
