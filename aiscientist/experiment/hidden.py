"""The hidden test: run once on one step's code, at least as guarded as validation.

It runs in a fresh copy of the original repository (hidden files included, visible
to these commands only) with the step's editable files laid over it. Protected files
are restored and read-only, and after the run the copy is checked exactly as a
validation step is (aiscientist/integrity.py); a failed check fails the test. After every
invocation the copy is held to the run-wide disk quota (experiment/quota.py): over it, the test
fails with cause "disk quota" and the excess is removed. A task
with a run / score split keeps its hidden files (but `test_inputs`) from the run and
scores the run's artifacts in an invocation of its own (aiscientist/experiment/scoring.py);
its `test_prepare` commands, run apart from any editable code, turn the hidden files into
the inputs the run sees (e.g. test features without the labels they share a seed with).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Protocol

from aiscientist.experiment import integrity, quota
from aiscientist.experiment.checked import Runner, run_checked
from aiscientist.experiment.runenv import clean_outputs
from aiscientist.experiment.scoring import Scorer, prepare_test_inputs, score_run, survivors_error
from aiscientist.records.causes import FailureCause
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import MetricsReading, TestResult
from aiscientist.task import Task, expand_globs, glob_match
from aiscientist.util import untrusted


class TestRunner(Scorer, Runner, Protocol):
    """What the hidden test needs of the experiment engine."""

    task: Task
    paths: RunPaths

    def read_metrics(self, metrics_path: Path, stdout: str = "") -> MetricsReading: ...


def run_hidden_test(engine: TestRunner, step: int) -> TestResult:
    task, paths = engine.task, engine.paths
    start = time.monotonic()
    if not task.test_commands:
        return TestResult(step=step, success=False, error="task has no hidden test commands", duration_s=0.0)
    code = paths.step_code(step)
    if not code.is_dir():
        return TestResult(step=step, success=False, error=f"step {step} has no code snapshot", duration_s=0.0)
    with untrusted.scratch_folder("aisci-test-") as tmp:
        copy = tmp / "repo"
        shutil.copytree(task.repository, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        clean_outputs(task, copy)
        if task.score:  # held-out labels reach only the score invocation
            for rel in expand_globs(copy, task.hidden):
                if not any(glob_match(rel, pattern) for pattern in task.test_inputs):
                    (copy / rel).unlink()
        result = (
            engine.run_commands(task.setup_commands, copy, hide_task=False, protect=False)
            if task.setup_commands
            else None
        )
        if task.test_prepare and (result is None or result.ok):
            result = prepare_test_inputs(engine, copy)
        for rel, entry in integrity.scan(code).items():
            if entry.kind != "file" or not task.is_editable(rel):
                continue
            try:
                data = untrusted.read_file(code, rel, integrity.READ_LIMIT, hard_links=True)
            except untrusted.Unreadable:
                continue
            untrusted.remove_tree(copy, rel)  # what setup left there is replaced, never written through
            untrusted.write_file(copy, rel, data)
        for rel in engine.protected_manifest():
            integrity.put_file(copy, rel, paths.pristine_files / rel)
        before = integrity.scan(copy)
        area = quota.WritableArea("the hidden test's copy", copy, quota.laid_out(copy))
        over: list[str] = []

        def check() -> str | None:  # after every invocation of the test's commands
            reason, _ = quota.enforce_areas(task.sandbox, [area])
            over.extend([reason] if reason else [])
            return reason

        if result is None or result.ok:
            lists = [(task.test_commands, task.timeout("test")), (task.postprocess_commands, task.timeout("test"))]
            result = run_checked(engine, copy, before, lists, test=True, after=check)
        reading = MetricsReading(error=result.failure() or survivors_error(result))
        guard = over[0] if over else _guard(engine, copy, before)
        if reading.error is None and not guard:
            reading = _reading(engine, copy, result.stdout_tail)
            if reading.error is None and reading.constraint_violated:  # FML-bench credits no such test
                reading = MetricsReading(
                    error="the test run flagged a violated constraint", cause=FailureCause.CONSTRAINT_VIOLATED
                )
        metric, metrics, error = (None, {}, guard) if guard else (reading.metric, reading.metrics, reading.error)
        cause = FailureCause.DISK_QUOTA if over else None
    return TestResult(
        step=step,
        metric=metric,
        metrics=metrics,
        success=error is None,
        error=error,
        cause=cause,
        duration_s=round(time.monotonic() - start, 3),
        score_isolated=task.score_isolated,
    )


def _reading(engine: TestRunner, copy: Path, stdout: str) -> MetricsReading:
    """The test's metrics: from the score invocation, or (no split) the copy's metrics file
    (or the test run's output `stdout`)."""
    if not engine.task.score:
        return engine.read_metrics(engine.task.metrics_path(copy, test=True), stdout)
    return score_run(engine, copy, integrity.scan(copy), test=True)[1]


def _guard(engine: TestRunner, copy: Path, before: dict[str, integrity.Entry]) -> str | None:
    """Why the copy may not be trusted after the test's run, or None."""
    changed = [rel for rel, digest in engine.protected_manifest().items() if integrity.file_digest(copy, rel) != digest]
    if changed:
        return f"tampering: protected file(s) changed during the hidden test: {', '.join(changed)}"
    metrics_rel = engine.task.metrics_path(copy, test=True).relative_to(copy).as_posix()
    broken = integrity.violations(engine.task, copy, before, integrity.scan(copy), metrics_rel)
    return "integrity: " + "; ".join(broken[:3]) if broken else None
