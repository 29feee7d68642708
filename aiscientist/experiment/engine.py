"""One experiment step: restore protected files → run → parse metrics → record.

The engine owns everything that makes a step trustworthy: protected files are
restored from pristine copies and verified by sha256 before every run and
checked again after it (a change is recorded as tampering and the step marked
invalid), commands run in the sandbox, and every attempt leaves a step folder
with `step.json`, output tails, the diff against the baseline and a snapshot of
the editable files. Between steps the repository is put back to its baseline
plus the editable files, and after a run anything else it left (a changed task
file, a shadowing module, a link out of the repository) makes the step invalid
(aiscientist/integrity.py).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from aiscientist.experiment import integrity, quota, snapshots
from aiscientist.experiment.checked import run_checked
from aiscientist.experiment.evidence import BASELINE_TAG, baseline_editable, write_code_evidence
from aiscientist.experiment.hidden import run_hidden_test
from aiscientist.experiment.repeats import Repeats, code_digest
from aiscientist.experiment.runenv import clean_outputs, conda_command, in_environment, readable_outside
from aiscientist.experiment.scoring import read_metrics, score_run, survivors_error
from aiscientist.experiment.setupfiles import SetupFiles
from aiscientist.records import ledger
from aiscientist.records.causes import FailureCause
from aiscientist.records.paths import DIFF, STDERR, STDOUT, STEP_CODE, RunPaths
from aiscientist.records.snapshot import Snapshot
from aiscientist.records.step import (
    PENDING_RECORD,
    STEP_RECORD,
    MetricsReading,
    StepLog,
    StepRecord,
    TestResult,
    capped_hypothesis,
    folder_hashes,
    sha256_file,
)
from aiscientist.sandbox import CommandsResult, Sandbox
from aiscientist.sandbox.base import passed_env
from aiscientist.task import Task, TaskError, check_after_setup, expand_globs

EventSink = Callable[[str, dict], None]


class ExperimentEngine:
    """Runs the task's command list on `paths.submission`, one counted step at a time."""

    BASELINE_TAG = BASELINE_TAG

    def __init__(
        self,
        task: Task,
        paths: RunPaths,
        sandbox: Sandbox,
        on_event: EventSink | None = None,
        env: Mapping[str, str] | None = None,
    ):
        self.task, self.paths, self.sandbox = task, paths, sandbox
        self.on_event: EventSink = on_event or (lambda kind, payload: None)
        self.env = {**passed_env(task.sandbox.pass_env), **dict(env or {})}  # what the task declares
        self._lock = threading.Lock()
        self._baseline_code: dict[str, str] | None = None  # editable files at the baseline commit
        self._last_step: int | None = None
        self._setup_files = SetupFiles()  # .pristine/'s JSON, parsed once per version
        self._steps = StepLog(paths)  # the ledger's input, read incrementally
        self.repeats = Repeats(task, paths, self.baseline_tree)

    # ---- setup and protected files ---------------------------------------------------

    @property
    def _manifest_path(self) -> Path:
        return self.paths.pristine_manifest

    @property
    def setup_done(self) -> bool:
        return self.paths.setup_done.is_file()

    def ensure_setup(self) -> None:
        """Once per workspace: run setup, commit the baseline, keep pristine copies.

        Raises TaskError when setup fails or a protected file is still missing."""
        if self.setup_done:
            return
        conda_command(self.task)  # a missing conda environment fails before anything runs
        submission = self.paths.submission
        result = self.run_commands(self.task.setup_commands, hide_task=False) if self.task.setup_commands else None
        source = self.task.source or self.task.repository
        if result is not None and not result.ok:
            raise TaskError(source, "setup_commands", result.failure() or "setup failed")
        if self.task.preprocess_commands:  # protected files as every step's preprocess leaves them
            self.run_commands(
                self.task.preprocess_commands, hide_task=False, protect=False, timeout=self.task.timeout("preprocess")
            )
        clean_outputs(self.task, submission)  # outputs are never part of the baseline
        check_after_setup(self.task, submission)
        manifest = {}
        for rel in expand_globs(submission, self.task.protected):
            target = self.paths.pristine_files / rel
            integrity.copy_out(submission, rel, target)
            manifest[rel] = sha256_file(target)
        self.paths.pristine.mkdir(parents=True, exist_ok=True)
        self._manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
        tree = integrity.scan(submission)
        integrity.keep_pristine(self.task, submission, tree, self.paths.pristine_files)
        self._folders_path.write_text(json.dumps(integrity.folders(submission)))
        self._tree_path.write_text(json.dumps({rel: e.to_json() for rel, e in tree.items()}, indent=1, sort_keys=True))
        snapshots.take(self.paths, self.BASELINE_TAG, "baseline", tree=tree)
        self.paths.state.mkdir(parents=True, exist_ok=True)
        self.paths.setup_done.write_text(
            json.dumps({"done_at": _now(), "setup": result.model_dump() if result else None}, indent=1)
        )

    @property
    def _tree_path(self) -> Path:
        return self.paths.pristine_tree

    @property
    def _folders_path(self) -> Path:
        return self.paths.pristine_folders

    def baseline_folders(self) -> list[str] | None:
        """The repository's folders as setup left it (None for run folders made before)."""
        folders = self._setup_files.read(self._folders_path, None)
        return None if folders is None else list(folders)

    def baseline_tree(self) -> dict[str, integrity.Entry]:
        """The repository as setup left it (empty for run folders made before it was kept)."""
        return dict(
            self._setup_files.read(
                self._tree_path, {}, lambda raw: {r: integrity.Entry.from_json(v) for r, v in raw.items()}
            )
        )

    def snapshot(self, tag: str, message: str) -> Snapshot:
        """Keep the submission's code as `tag` (e.g. `best`): the baseline's and the editable
        files, never outputs; what the step made counts against a per-file cap and the quota."""
        baseline, tree = self.baseline_tree(), integrity.scan(self.paths.submission)
        return snapshots.take(
            self.paths,
            tag,
            message,
            keep=lambda rel: rel in baseline or self.task.is_editable(rel),
            limited=lambda rel: baseline.get(rel) != tree.get(rel),
            budget=int(self.task.sandbox.disk_mb * (1 << 20)),
            tree=tree,
        )

    def protected_manifest(self) -> dict[str, str]:
        return dict(self._setup_files.read(self._manifest_path, {}))

    def tampered_files(self) -> list[str]:
        """Protected files whose content differs from the pristine hash (or are gone, or
        are no regular file reached without a link: nothing is followed out of the tree)."""
        sub = self.paths.submission
        return [rel for rel, digest in self.protected_manifest().items() if integrity.file_digest(sub, rel) != digest]

    def restore_protected(self) -> list[str]:
        """Copy pristine protected files back; return those that needed it. A link, FIFO or
        file in the way (a folder on the path swapped for a link too) is removed, never written through."""
        restored = []
        for rel, digest in self.protected_manifest().items():
            if integrity.file_digest(self.paths.submission, rel) == digest:
                continue
            integrity.put_file(self.paths.submission, rel, self.paths.pristine_files / rel)
            if integrity.file_digest(self.paths.submission, rel) != digest:
                raise RuntimeError(
                    f"pristine copy of {rel} does not match its recorded hash; the run folder is corrupt"
                )
            restored.append(rel)
        if restored:
            self.on_event("protected.restored", {"files": restored})
        return restored

    # ---- steps -----------------------------------------------------------------------

    def next_step(self) -> int:
        """The number the next step gets (the folders are listed once per engine;
        after that the engine counts the steps it records itself)."""
        if self._last_step is None:
            done = [int(p.parent.name.split("_")[1]) for p in self.paths.step_records()]
            self._last_step = max(done, default=0)
        return self._last_step + 1

    def run_step(
        self, agent: str, hypothesis: str, tokens: int = 0, cost: float = 0.0, baseline: bool = False
    ) -> StepRecord:
        """Run the experiment command list once on the current code and record it; code an earlier
        measured step (or, unless this step measures the `baseline`, the baseline) ran is a repeat."""
        hypothesis = capped_hypothesis(hypothesis)  # whoever sent it (a tool call, a peer's bridge request)
        with self._lock:
            self.ensure_setup()
            step = self.next_step()
            step_dir = self.paths.step_dir(step)
            if step_dir.exists():  # an attempt that crashed before recording
                shutil.rmtree(step_dir)
            step_dir.mkdir(parents=True)
            started = _now()
            allowed = self._reset_tree(step)
            preprocess = None
            if self.task.preprocess_commands:  # it ran at setup too, so it changes nothing the baseline lacks
                before = integrity.scan(self.paths.submission)
                preprocess = self.run_commands(
                    self.task.preprocess_commands,
                    hide_task=False,
                    protect=False,
                    timeout=self.task.timeout("preprocess"),
                )
                allowed |= {rel: e for rel, e in integrity.scan(self.paths.submission).items() if before.get(rel) != e}
            tampered_before = self.restore_protected()
            if tampered_before:
                self.on_event("protected.tampered", {"step": step, "files": tampered_before, "found": "before run"})
            metrics_path = self.task.metrics_path(self.paths.submission)
            clean_outputs(self.task, self.paths.submission)
            self.on_event("experiment.start", {"step": step, "agent": agent, "hypothesis": hypothesis[:500]})
            lists = [(self.task.commands, None), (self.task.postprocess_commands, self.task.timeout("postprocess"))]
            result = preprocess  # each command runs on a checked tree (experiment/checked.py)
            if preprocess is None or preprocess.ok:
                result = run_checked(self, self.paths.submission, allowed, lists)
            tampered = self.tampered_files()
            tree = integrity.scan(self.paths.submission)
            broken = integrity.violations(
                self.task, self.paths.submission, allowed, tree, self._metrics_rel(self.paths.submission)
            )
            broken = [v for v in broken if v.split(":", 1)[0] not in tampered]
            if broken:
                files = [v.split(":", 1)[0] for v in broken[:50]]
                self.on_event(
                    "integrity.violation", {"step": step, "files": files, "found": "after run", "problem": broken[0]}
                )
            over, removed = quota.enforce(self.task, self.paths.submission, allowed, tree, self.baseline_folders())
            if over:
                self.on_event("quota.exceeded", {"step": step, "problem": over, "removed": removed[:50]})
            scored = None
            if self.task.score and result.ok and not (tampered or broken or over):  # the run's processes are all dead
                score_result, scored = score_run(self, self.paths.submission, tree)
                result = result.then(score_result)
            elif survivors_error(result):
                scored = MetricsReading(error=survivors_error(result), cause=FailureCause.INTEGRITY)
            record = self._record(
                step, agent, hypothesis, started, result, metrics_path, tampered, tokens, cost, broken, scored
            )
            digest = code_digest(self.task, tree)
            update = {"code_sha256": digest, "repeat_of": None if baseline else self.repeats.find(digest)}
            if over and not tampered:
                update |= {"success": False, "valid": False, "error": over, "cause": FailureCause.DISK_QUOTA}
            record = record.model_copy(update=update)
            if tampered:
                self.on_event("protected.tampered", {"step": step, "files": tampered, "found": "after run"})
                self.restore_protected()
            (step_dir / STDOUT).write_text(result.stdout_tail)
            (step_dir / STDERR).write_text(result.stderr_tail)
            if self._baseline_code is None:
                self._baseline_code = baseline_editable(self.task, self.paths)
            write_code_evidence(self.task, self.paths, self._baseline_code, tree, step_dir)
            # the record becomes visible only once its end event (with every file's hash) is on disk
            tmp = step_dir / PENDING_RECORD
            tmp.write_text(record.model_dump_json(indent=1))
            self.on_event(
                "experiment.end",
                {
                    "step": step,
                    "success": record.success,
                    "metric": record.metric,
                    "error": record.error,
                    "files": folder_hashes(step_dir),
                },
            )
            os.replace(tmp, step_dir / STEP_RECORD)
            self._last_step = step
            self.repeats.add(record)
            direction = self.task.metric.direction if self.task.metric else None
            ledger.append(self.paths, self._steps.records(), direction, self.task.baseline)
            self.on_event("experiment.recorded", {"step": step})
            return record

    def _reset_tree(self, step: int) -> dict[str, integrity.Entry]:
        """Back to baseline + editable files; returns the baseline tree."""
        baseline = self.baseline_tree()
        if baseline:
            sub, pristine = self.paths.submission, self.paths.pristine_files
            touched = integrity.reset_tree(self.task, sub, baseline, pristine, self.baseline_folders())
            if touched:
                self.on_event("tree.reset", {"step": step, "paths": touched[:50], "count": len(touched)})
        return baseline

    def _metrics_rel(self, repo: Path, test: bool = False) -> str:
        return self.task.metrics_path(repo, test).relative_to(repo).as_posix()

    def run_commands(
        self,
        commands: list[str],
        repo: Path | None = None,
        hide_task: bool = True,
        protect: bool = True,
        timeout: float | None = None,
    ) -> CommandsResult:
        """Run `commands` in `repo` (default: the submission), the only writable folder.

        `hide_task`: the task's own folders (hidden test assets, rubric) are invisible.
        `protect`: the protected files recorded at setup are read-only."""
        repo = repo or self.paths.submission
        readonly = [repo / rel for rel in self.protected_manifest()] if protect else []
        if not hide_task:  # the task author's own commands (setup) may read the task's folders
            readonly += [self.task.repository, *([self.task.source.parent] if self.task.source else [])]
        hide = [self.paths.pristine, *(self.task.agent_hidden_paths() if hide_task else [])]
        return self.sandbox.run(
            in_environment(self.task, commands),
            cwd=repo / self.task.working_dir,
            timeout=timeout or self.task.command_timeout_s,
            env={"MPLBACKEND": "Agg", **self.env},
            writable=[repo],
            readonly=[*readonly, *readable_outside(self.task)],
            hidden=hide,
        )

    def _record(
        self,
        step: int,
        agent: str,
        hypothesis: str,
        started: str,
        result: CommandsResult,
        metrics_path: Path,
        tampered: list[str],
        tokens: int,
        cost: float,
        broken: list[str],
        scored: MetricsReading | None = None,
    ) -> StepRecord:
        reading = MetricsReading(error=result.failure(), cause=result.failure_cause())
        if scored is not None and (reading.error is None or scored.error):
            reading = scored  # what the score invocation wrote (or why the run was not scored)
        elif reading.error is None and self.task.metric is not None:
            reading = self.read_metrics(metrics_path, result.stdout_tail)
        error, cause = reading.error, reading.cause
        if broken:
            error, cause = (
                "; ".join(broken[:3]) + (f" (+{len(broken) - 3} more)" if len(broken) > 3 else ""),
                FailureCause.INTEGRITY,
            )
        if tampered:
            error, cause = (
                f"tampering: protected file(s) changed during the run: {', '.join(tampered)}",
                FailureCause.PROTECTED_CHANGED,
            )
        if cause is None and reading.constraint_violated:
            cause = FailureCause.CONSTRAINT_VIOLATED
        rel = self.paths.step_dir(step).relative_to(self.paths.root)
        return StepRecord(
            step=step,
            agent=agent,
            hypothesis=hypothesis,
            started_at=started,
            commands=result.commands,
            returncodes=result.returncodes,
            duration_s=round(result.duration_s, 3),
            timed_out=result.timed_out,
            backend=result.backend,
            metric=reading.metric,
            metrics=reading.metrics,
            success=error is None,
            valid=not tampered and not broken,
            constraint_violated=reading.constraint_violated,
            error=error,
            cause=cause,
            diff_path=str(rel / DIFF),
            code_path=str(rel / STEP_CODE),
            score_isolated=self.task.score_isolated,
            tokens=tokens,
            cost=cost,
            peak_memory_mb=result.memory.peak_mb if result.memory else None,
        )

    def read_metrics(self, metrics_path: Path, stdout: str = "") -> MetricsReading:
        """The target metric, all metrics and the constraints' verdict (`scoring.read_metrics`)."""
        return read_metrics(self.task, self.paths, metrics_path, stdout)

    # ---- hidden test -----------------------------------------------------------------

    def run_test(self, step: int) -> TestResult:
        """The hidden test, run once on `step`'s code (experiment/hidden.py)."""
        test = run_hidden_test(self, step)
        self.on_event("experiment.test", test.model_dump())
        return test


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
