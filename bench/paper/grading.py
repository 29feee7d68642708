"""Grade one paper-reproduction submission (the `grade` command, and `bench run` on paper tasks):
reproduce, judge, score, and write `grade.json` (the graded tree in PaperBench's format,
`bench.paper.graded_tree`) and `grade_summary.json` (`GradeResult` without the tree).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field
from rich.text import Text
from rich.tree import Tree

from aiscientist.sandbox import Sandbox
from aiscientist.task import Task, load_task
from aiscientist.util import untrusted
from aiscientist.util.text import clean
from bench.paper import rubric as rubric_mod
from bench.paper.graded_tree import graded_json
from bench.paper.judge import OFFLINE, Completer, Evidence, Judge
from bench.paper.reproduce import GRADE_FILE, GRADER_FILES, LOG, LOG_COPY, Reproduction, reproduce
from bench.paper.rubric import GradedNode, RubricError, aggregate

DEFAULT_TIMEOUT_S = 3600.0
SUMMARY_FILE = "grade_summary.json"
LFS_POINTER = "version https://git-lfs"
LOG_BYTES = 64 << 20
PAPER_BYTES = 64 << 20


class GradeResult(BaseModel):
    paper: str
    submission: Path
    judge_model: str
    code_dev: bool
    max_depth: int | None
    started_at: str
    duration_s: float
    score: float
    valid: bool
    leaves_graded: int
    leaves_invalid: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    reproduction: Reproduction | None
    # why the reproduction's results are missing or incomplete (None when it ran to its end or was skipped)
    reproduction_problem: str | None = None
    tree: GradedNode = Field(exclude=True)
    grade_file: Path | None = None


class PaperFiles(BaseModel):
    name: str
    paper: str
    addendum: str
    rubric: Path
    timeout_s: float


def paper_files(paper_dir: Path) -> PaperFiles:
    """paper.md, addendum.md and rubric.json of a paper folder; a task.yaml there
    may name the paper and addendum and sets the reproduction time limit."""
    paper_dir = Path(paper_dir)
    if not paper_dir.is_dir():
        raise RubricError(f"{paper_dir}: paper folder not found")
    paper, addendum, timeout = paper_dir / "paper.md", paper_dir / "addendum.md", DEFAULT_TIMEOUT_S
    if (paper_dir / "task.yaml").is_file():
        task = load_task(paper_dir / "task.yaml")
        paper, addendum, timeout = task.paper or paper, task.addendum or addendum, task.command_timeout_s
    if not paper.is_file():
        raise RubricError(f"{paper}: paper file not found")
    return PaperFiles(
        name=paper_dir.resolve().name,
        paper=_text(paper),
        addendum=_text(addendum) if addendum.is_file() else "",
        rubric=paper_dir / "rubric.json",
        timeout_s=timeout,
    )


def _text(path: Path) -> str:
    """A paper or addendum, read without following a link (a JudgeEval folder's papers come with its
    cases: a paper.md linked to a host file would be sent to the judge's model)."""
    try:
        text = untrusted.read_file(path.parent, path.name, PAPER_BYTES).decode(errors="replace")
    except untrusted.Unreadable as err:
        raise RubricError(f"{path}: {err.reason}") from None
    if text.startswith(LFS_POINTER):  # PaperBench's repository keeps its papers in Git LFS
        raise RubricError(f"{path}: a Git LFS pointer, not the file; fetch it first (git lfs pull)")
    return text


def make_judge_client(model: str) -> Completer | None:
    if model == OFFLINE:
        return None
    from aiscientist.llm import make_client

    return make_client(model, role="judge")


def grade_submission(
    submission_dir: str | Path,
    paper_dir: str | Path,
    judge_model: str = OFFLINE,
    code_dev: bool = False,
    out: str | Path | None = None,
    *,
    timeout_s: float | None = None,
    max_depth: int | None = None,
    concurrency: int = 4,
    sandbox: Sandbox | str | None = None,
    client: Completer | None = None,
) -> GradeResult:
    """Reproduce (unless `code_dev`), judge every leaf, score the tree and write
    `grade.json`, `grade_summary.json` (and `grade_reproduce.log`) into `out` (default:
    the submission folder). `client` overrides the model client built from `judge_model`."""
    submission = Path(submission_dir).resolve()
    if not submission.is_dir():
        raise RubricError(
            f"{submission}: {'not a directory' if submission.exists() else 'submission folder not found'}"
        )
    if all(node.rel in GRADER_FILES for node, _ in untrusted.TreeWalk(submission)):  # stops at the first other
        raise RubricError(f"{submission}: the submission folder is empty")
    files = paper_files(Path(paper_dir))
    root = rubric_mod.load(files.rubric).root
    if code_dev:
        root = rubric_mod.code_dev_view(root)
        if root is None:
            raise RubricError(f"{files.rubric}: no Code Development leaves, nothing to grade in code-dev mode")
    judge = Judge(
        judge_model,
        files.paper,
        files.addendum,
        client if client is not None else make_judge_client(judge_model),
        concurrency,
    )
    started, clock = datetime.now(UTC), time.monotonic()
    out_dir = Path(out).resolve() if out is not None else submission
    out_dir.mkdir(parents=True, exist_ok=True)
    with untrusted.scratch_folder("aisci-grade-") as work:  # the reproduction's copy: any depth, removed
        reproduction = None
        if not code_dev:
            reproduction = reproduce(submission, work, timeout_s or files.timeout_s, sandbox)
            if reproduction.ran:
                write_output(out_dir, LOG_COPY, _log_copy(reproduction))
        evidence = Evidence.collect(submission, reproduction)
        grades = judge.grade_all(root, evidence, max_depth)
    tree = aggregate(root, grades)
    result = GradeResult(
        paper=files.name,
        submission=submission,
        judge_model=judge_model,
        code_dev=code_dev,
        max_depth=max_depth,
        started_at=started.isoformat(timespec="seconds"),
        duration_s=round(time.monotonic() - clock, 3),
        **tree.model_dump(include={"score", "valid", "prompt_tokens", "completion_tokens", "cost"}),
        leaves_graded=len(grades),
        leaves_invalid=sum(not g.valid for g in grades.values()),
        reproduction=reproduction,
        reproduction_problem=reproduction.problem if reproduction is not None else None,
        tree=tree,
        grade_file=out_dir / GRADE_FILE,
    )
    # `out` defaults to the submission folder, where the submission may have planted links
    write_output(out_dir, GRADE_FILE, graded_json(tree).encode())
    write_output(out_dir, SUMMARY_FILE, (result.model_dump_json(indent=2) + "\n").encode())
    return result


def write_output(folder: Path, rel: str, data: bytes) -> None:
    """Write one of the grader's own files into a folder the submission may have planted
    entries in: whatever is at `rel` (a link, FIFO, hard link or folder) is removed without
    being followed, and so is anything but a folder on the way; then the file is written
    without following a link."""
    parts = rel.split("/")
    for end in range(1, len(parts)):
        on_the_way = folder.joinpath(*parts[:end])  # the folders before it were checked already
        if on_the_way.is_symlink() or (on_the_way.exists() and not on_the_way.is_dir()):
            untrusted.remove_tree(folder, "/".join(parts[:end]))
    untrusted.remove_tree(folder, rel)
    try:
        untrusted.write_file(folder, rel, data)
    except untrusted.Unreadable as err:
        raise RubricError(f"{folder}: cannot write {clean(rel)}: {err.reason}") from None


def _log_copy(reproduction: Reproduction) -> bytes:
    """reproduce.log as the grader keeps it: read without following a link, at most LOG_BYTES."""
    try:
        return untrusted.read_file(reproduction.copy_dir, LOG, LOG_BYTES)
    except untrusted.Unreadable as err:
        return f"[grader] {LOG} not copied: {err.reason}\n".encode()


def grade_task(
    task: Task,
    submission_dir: str | Path,
    judge_model: str = OFFLINE,
    out: str | Path | None = None,
    code_dev: bool = False,
    **options,
) -> GradeResult:
    """`grade_submission` for a loaded task of kind `reproduce`: the paper folder is
    the one holding its task.yaml (with rubric.json beside it)."""
    if task.kind != "reproduce" or task.source is None:
        raise RubricError(f"task {task.name!r} is not a paper-reproduction task loaded from a task.yaml")
    return grade_submission(submission_dir, Path(task.source).parent, judge_model, code_dev, out, **options)


def render_tree(node: GradedNode, width: int = 90, parent: Tree | None = None) -> Tree:
    """The graded tree for the terminal: score, weight, validity and the requirement."""
    branch = Tree(_label(node, width)) if parent is None else parent.add(_label(node, width))
    for child in node.sub_tasks:
        render_tree(child, width, branch)
    return branch


def _label(node: GradedNode, width: int) -> Text:
    colour = "green" if node.score >= 0.75 else "yellow" if node.score > 0.25 else "red"
    label = Text(f"{node.score:.2f}", style=f"bold {colour}")
    label.append(f" w={node.weight:g}", style="dim")
    if not node.valid:
        label.append(" INVALID", style="bold red")
    if node.method != "aggregate":
        label.append(f" [{node.method}{', subtree' if node.subtree else ''}]", style="cyan")
    requirement = node.requirements if len(node.requirements) <= width else node.requirements[: width - 1] + "…"
    label.append(f" {requirement}")
    return label
