"""`aiscientist task init REPO --run CMD --metric NAME:min|max`: a task.yaml for a repository,
its baseline measured in the sandbox (also the first half of `solve REPO --run CMD ...`).

Bad input (no such folder, a run that fails, no metric line, a metric that is not a number,
a direction other than min or max) is one TaskError (exit 2) and nothing is written.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from aiscientist.records.causes import FailureCause
from aiscientist.records.metrics_file import MetricsError, load_means, pick
from aiscientist.records.paths import STDOUT
from aiscientist.sandbox.base import SandboxSettings
from aiscientist.task import Task, TaskError
from aiscientist.task.draft import (
    Draft,
    final_info_dataset,
    parse_metric,
    raw_task,
    relative_repository,
    render,
    resolve_files,
    stub,
    stub_path,
    task_name,
)
from aiscientist.task.load import parse_task_yaml
from aiscientist.task.model import mean_key
from aiscientist.util.console import make_console
from aiscientist.util.text import clean

console = make_console()
MIN_TIMEOUT_S = 600
NOT_ISOLATED = (
    "quick mode: the metric is read from the run's own output, so the score is not isolated from the agents' code "
    "(score_isolated: false); for an isolated score use --score CMD --artifacts GLOB"
)


def add_init_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """The flags `task init` and `solve REPO --run` share."""
    parser.add_argument("--run", required=required, metavar="CMD", help="the command that trains and prints the metric")
    parser.add_argument("--editable", action="append", default=[], metavar="GLOB", help="files the agents may change "
                        "(repeatable; default: the Python files the run command reaches)")  # fmt: skip
    parser.add_argument("--protected", action="append", default=[], metavar="GLOB", help="files the agents may read "
                        "but not change (repeatable)")  # fmt: skip
    parser.add_argument("--score", metavar="CMD", help="score the run's artifacts apart from the agents' code: the "
                        "command writes $SCORE_OUT/final_info.json (the run / score split)")  # fmt: skip
    parser.add_argument("--artifacts", nargs="+", default=[], metavar="GLOB", help="the data files the run leaves for "
                        "--score (e.g. preds.npy)")  # fmt: skip


@dataclass
class Initialised:
    """A drafted task with its baseline measured."""

    draft: Draft
    baseline: float
    duration_s: float
    backend: str

    def text(self, out: Path, absolute: bool = False) -> str:
        repository = str(self.draft.repository) if absolute else relative_repository(self.draft.repository, out)
        timeout = max(MIN_TIMEOUT_S, math.ceil(10 * self.duration_s))
        return render(raw_task(self.draft, self.baseline, timeout, repository), self.duration_s)


def draft_from_args(args: argparse.Namespace, repo_arg: str) -> Draft:
    """The flags checked and resolved into a Draft (no file read beyond the repository's code)."""
    repo = Path(repo_arg).expanduser().resolve()
    if not repo.is_dir():
        raise TaskError(repo_arg, "repository", "no such folder")
    dataset, name, direction = parse_metric(args.metric or "")
    if args.score and not args.artifacts:
        raise TaskError("--score", "artifacts", "name the files the run leaves for the score command: --artifacts GLOB")
    if args.artifacts and not args.score:
        raise TaskError("--artifacts", "score", "artifacts are read by a score command: add --score CMD")
    editable, protected, scorer = resolve_files(repo, args.run, args.editable, args.protected, args.score)
    return Draft(
        repository=repo,
        run=args.run,
        metric=name,
        direction=direction,
        dataset=dataset or task_name(repo),
        editable=editable,
        protected=protected,
        score=args.score,
        artifacts=args.artifacts,
        scorer=scorer,
        metric_source="metrics_file" if args.score else "stdout",
    )


def check(draft: Draft, out: Path, sandbox: str | SandboxSettings) -> Task:
    """The drafted task as `task show` and preflight read it (no baseline yet)."""
    from aiscientist.orchestrator.preflight import check_task

    task = parse_task_yaml(render(raw_task(draft, None, MIN_TIMEOUT_S, str(draft.repository))), out)
    check_task(task, sandbox)
    return task


def measure(draft: Draft, task: Task, sandbox: str | SandboxSettings) -> Initialised:
    """Run the unchanged code once as a step in a scratch run folder; a repository that
    writes FML-bench's final_info.json with the metric is read as such."""
    from aiscientist.experiment.finish import measure_baseline
    from aiscientist.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="aisci-init-") as tmp:
        ws = Workspace.create(task, Path(tmp) / "run", file_bus=False, sandbox=sandbox)
        started = time.monotonic()
        record, _ = measure_baseline(ws, test=False)
        duration = time.monotonic() - started
        ran = not record.returncodes or all(rc == 0 for rc in record.returncodes)
        if draft.metric_source == "stdout" and ran and not record.timed_out:
            found = _final_info(draft, task.metrics_path(ws.paths.submission), ws.paths.submission)
            if found is not None:
                draft = draft.model_copy(update={"metric_source": "metrics_file", "dataset": found[0]})
                return Initialised(draft, found[1], duration, ws.engine.sandbox.name)
        if not record.success or record.metric is None:
            output = (ws.paths.step_dir(record.step) / STDOUT).read_text(errors="replace")
            raise _failure(draft, record.error or "no metric", record.cause, output)
        return Initialised(draft, record.metric, duration, ws.engine.sandbox.name)


def _final_info(draft: Draft, path: Path, root: Path) -> tuple[str, float] | None:
    """(dataset, value) of the metric in the final_info.json the run wrote, if it holds it."""
    if not path.is_file():
        return None
    try:
        means = load_means(path, root)
        dataset = final_info_dataset(means, draft.metric, None)
        return None if dataset is None else (dataset, pick(means, dataset, mean_key(draft.metric)))
    except MetricsError:
        return None


def _failure(draft: Draft, error: str, cause: FailureCause | None, output: str) -> TaskError:
    if cause in (FailureCause.METRIC_MISSING, FailureCause.METRIC_NOT_NUMBER, FailureCause.METRICS_FILE_MISSING):
        if draft.score:
            return TaskError("--metric", "metric", f"{error}; name the dataset the score command writes: --metric "
                             f"DATASET/{draft.metric}:{draft.direction}")  # fmt: skip
        tail = [clean(line, 160) for line in output.strip().splitlines()[-3:]]
        shown = " | ".join(tail) if tail else "(no output)"
        return TaskError("--metric", "metric", f"{error}; the output ended with: {shown}")
    field = "--score" if draft.score and draft.score in error else "--run"
    return TaskError(field, "run", f"the unchanged code fails in the sandbox: {error}")


def initialise(args: argparse.Namespace, repo_arg: str, out: Path, sandbox: str | SandboxSettings) -> Initialised:
    """Draft, check and measure; nothing written."""
    draft = draft_from_args(args, repo_arg)
    task = check(draft, out, sandbox)
    done = measure(draft, task, sandbox)
    parse_task_yaml(done.text(out), out)  # the file as written loads (as `task show` reads it)
    return done


def write_stub(args: argparse.Namespace) -> int:
    """`--scorer-stub`: write the score command's script and stop (the scoring is the user's to write)."""
    if not args.score:
        raise TaskError("--scorer-stub", "score", "the stub is the score command's script: add --score 'python "
                        "evaluate.py' --artifacts GLOB")  # fmt: skip
    repo = Path(args.repo).expanduser().resolve()
    if not repo.is_dir():
        raise TaskError(args.repo, "repository", "no such folder")
    dataset, name, direction = parse_metric(args.metric or "")
    draft = Draft(repository=repo, run=args.run, metric=name, direction=direction, dataset=dataset or task_name(repo),
                  editable=[], score=args.score, artifacts=args.artifacts)  # fmt: skip
    path = stub_path(draft)
    if path.exists():
        raise TaskError("--scorer-stub", "score", f"{path} already exists; run task init without --scorer-stub")
    path.write_text(stub(draft))
    console.print(f"wrote {path}: fill in score(), then run the same task init without --scorer-stub", soft_wrap=True)
    return 0


def run_init(args: argparse.Namespace) -> int:
    if args.scorer_stub:
        return write_stub(args)
    repo = Path(args.repo).expanduser()
    out = Path(args.out) if args.out else repo / "task.yaml"
    if out.exists() and not args.force:
        raise TaskError(out, "--out", "already exists: remove it, pass --force, or write elsewhere with --out FILE")
    with console.status(f"measuring the baseline: {args.run} ..."):
        done = initialise(args, args.repo, out, args.sandbox)
    out.write_text(done.text(out))
    draft = done.draft
    console.print(
        f"wrote {out}: baseline {draft.metric} = {done.baseline!r} ({draft.direction}), measured in "
        f"{done.duration_s:.1f} s in the {done.backend} sandbox; editable: {', '.join(draft.editable)}",
        soft_wrap=True,
        highlight=False,
    )
    if draft.metric_source == "stdout":
        console.print(f"[yellow]note:[/] {NOT_ISOLATED}", soft_wrap=True)
    console.print(f"next:  python -m aiscientist solve {out} --model MODEL", soft_wrap=True, highlight=False)
    console.print(
        "       (MODEL: a litellm name, local/qwen2.5-coder-1.5b, or offline to try it without a model)", soft_wrap=True
    )
    return 0
