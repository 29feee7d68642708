"""How well a judge agrees with human grades: PaperBench's JudgeEval, on our judge.

A case is a folder `<paper-id>/<k>/` holding the human-graded tree `grading/expected_result.json`
and the submission that was graded, already run (`submission/` or `submission.tar`); the paper
comes from `<papers>/<paper-id>/` (default: `papers` beside the cases' root, as in PaperBench's
`data/`). The judge's 0/1 leaf grades are compared with the expected ones as PaperBench does
(macro-averaged over pass and fail); leaves the judge failed to grade are counted as `invalid`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field
from rich.table import Table
from rich.text import Text

from aiscientist.util import untrusted
from aiscientist.util.archive import ArchiveError, unpack
from aiscientist.util.text import clean
from aiscientist.util.text import name as shown
from bench.paper import rubric
from bench.paper.graded_tree import load_graded
from bench.paper.grading import LFS_POINTER, make_judge_client, paper_files
from bench.paper.judge import Completer, Evidence, Judge
from bench.paper.rubric import GradedNode, RubricError, aggregate
from bench.scoring.metrics import group_by

EXPECTED = Path("grading") / "expected_result.json"
SUBMISSION, ARCHIVE = "submission", "submission.tar"
OVERALL = "Overall"
JUDGE_EVAL_FILE = "judge_eval.json"


class Agreement(BaseModel):
    """Leaf-grade agreement of one group of leaves."""

    accuracy: float
    precision: float
    recall: float
    f1: float
    leaves: int
    expected_pass: int
    predicted_pass: int


class CaseResult(BaseModel):
    case: str
    expected_score: float
    judge_score: float
    score_difference: float  # judge − expected
    invalid: int
    agreement: dict[str, Agreement]
    prompt_tokens: int
    completion_tokens: int
    cost: float
    tree: GradedNode = Field(exclude=True)  # the judge's graded tree


class JudgeEvalResult(BaseModel):
    judge_model: str
    cases: list[CaseResult]
    agreement: dict[str, Agreement]  # pooled over every case's leaves
    mean_abs_score_difference: float
    skipped: dict[str, str] = {}  # case -> why it could not be graded (its files are untrusted)


Leaf = tuple[str, int, int]  # task category, expected and predicted pass (1) or fail (0)


def agreement(expected: list[int], predicted: list[int]) -> Agreement:
    """PaperBench's figures for binary leaf grades (macro averages; 0 where undefined)."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    if not expected:
        return Agreement(accuracy=0, precision=0, recall=0, f1=0, leaves=0, expected_pass=0, predicted_pass=0)
    precision, recall, f1, _ = precision_recall_fscore_support(expected, predicted, average="macro", zero_division=0)
    return Agreement(
        accuracy=float(accuracy_score(expected, predicted)),
        precision=float(precision),
        recall=float(recall),
        f1=float(f1),
        leaves=len(expected),
        expected_pass=sum(expected),
        predicted_pass=sum(predicted),
    )


def agreements(leaves: list[Leaf]) -> dict[str, Agreement]:
    """Agreement overall and per task category."""
    groups = {OVERALL: leaves} | group_by(leaves, lambda leaf: leaf[0])
    return {key: agreement([e for _, e, _ in group], [p for _, _, p in group]) for key, group in groups.items()}


def find_cases(root: Path) -> list[Path]:
    """Every case folder under `root` (or `root` itself when it is one). The folder is
    untrusted: it is walked with the bounded, no-follow walker, so a `grading` folder or
    an expected file that is a link is no case, and a deep tree is cut, not recursed."""
    root = Path(root)
    if not root.is_dir():
        raise RubricError(f"{root}: judge-eval folder not found")
    wanted = EXPECTED.as_posix()
    walked = untrusted.walk(root, enter=lambda rel: rel.rsplit("/", 1)[-1] != SUBMISSION)
    found = [n.rel[: -len(wanted)] for n in walked.files() if n.rel == wanted or n.rel.endswith("/" + wanted)]
    cases = sorted(root / rel for rel in found)
    if not cases:
        raise RubricError(f"{root}: no judge-eval case (a folder with {EXPECTED}) found")
    return cases


def submission_of(case: Path, work: Path) -> Path:
    """The case's submission folder, unpacking `submission.tar` into `work` if needed;
    neither is followed when it is a link."""
    folder, archive = case / SUBMISSION, case / ARCHIVE
    if folder.is_dir() and not folder.is_symlink():
        return folder
    try:
        head = untrusted.read_head(case, ARCHIVE, len(LFS_POINTER))
    except untrusted.Unreadable as err:
        raise RubricError(f"{case}: no {SUBMISSION}/ folder or {ARCHIVE} ({ARCHIVE}: {err.reason})") from None
    if head == LFS_POINTER.encode():
        raise RubricError(f"{archive}: a Git LFS pointer, not the archive; fetch it first (git lfs pull)")
    work = work / "unpacked"
    try:  # member by member, each checked first (never tarfile's own extraction)
        unpack(archive, work)
    except ArchiveError as err:
        raise RubricError(f"{archive}: cannot unpack: {err}") from None
    inner = [p for p in work.iterdir() if p.is_dir() and not p.is_symlink()]
    return inner[0] if len(inner) == 1 and len(list(work.iterdir())) == 1 else work


def evaluate_case(
    case: Path, papers: Path, judge_model: str, client: Completer | None, concurrency: int
) -> tuple[CaseResult, list[Leaf]]:
    expected = load_graded(case / EXPECTED)
    root = expected.to_rubric()
    rubric.validate(root)
    files = paper_files(papers / case.parent.name)
    judge = Judge(judge_model, files.paper, files.addendum, client, concurrency)
    with tempfile.TemporaryDirectory(prefix="aisci-judge-eval-") as work:
        submission = submission_of(case, Path(work))
        grades = judge.grade_all(root, Evidence.executed(submission))
    graded = aggregate(root, grades)
    wanted = dict(expected.walk_paths())
    leaves = [
        (wanted[path].task_category or "(none)", int(wanted[path].score >= 0.5), int(grade.score >= 0.5))
        for path, grade in grades.items()
        if grade.valid
    ]
    result = CaseResult(
        case=case_name(case),
        expected_score=expected.score,
        judge_score=graded.score,
        score_difference=graded.score - expected.score,
        invalid=len(grades) - len(leaves),
        agreement=agreements(leaves),
        **graded.model_dump(include={"prompt_tokens", "completion_tokens", "cost"}),
        tree=graded,
    )
    return result, leaves


def case_name(case: Path) -> str:
    """`<paper-id>/<k>`, shown escaped (folder names are untrusted) and used as the case's output folder."""
    return f"{shown(case.parent.name)}/{shown(case.name)}"


def run_judge_eval(
    root: Path,
    judge_model: str,
    papers: Path | None = None,
    concurrency: int = 4,
    client: Completer | None = None,
    on_case: Callable[[CaseResult], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
) -> JudgeEvalResult:
    """Grade every case under `root` with the judge and measure its agreement with the expected
    grades; a case that cannot be graded (a bad expected file, archive or paper) is skipped with
    its reason, and the others are still graded."""
    cases = find_cases(root)
    client = client if client is not None else make_judge_client(judge_model)
    pooled: list[Leaf] = []
    results, skipped = [], {}
    for case in cases:
        try:
            result, leaves = evaluate_case(
                case, papers or case.parent.parent.parent / "papers", judge_model, client, concurrency
            )
        except RubricError as err:
            reason = clean(err, 2000)  # it quotes the case's path, whose names are untrusted
            skipped[case_name(case)] = reason
            if on_skip is not None:
                on_skip(case_name(case), reason)
            continue
        pooled += leaves
        results.append(result)
        if on_case is not None:
            on_case(result)
    if not results:
        raise RubricError(f"{root}: no case could be graded; {next(iter(skipped.items()))[1]}")
    return JudgeEvalResult(
        judge_model=judge_model,
        cases=results,
        agreement=agreements(pooled),
        mean_abs_score_difference=sum(abs(r.score_difference) for r in results) / len(results),
        skipped=skipped,
    )


def render(result: JudgeEvalResult) -> Table:
    """Per case and pooled: the root scores and leaf agreement, overall and per task category."""
    table = Table(title=f"judge {result.judge_model} against the expected grades")
    for column in ("case", "leaves", "accuracy", "precision", "recall", "F1", "root: expected / judge (diff)"):
        table.add_column(column, justify="left" if column == "case" else "right")
    rows = [
        (r.case, r.agreement, f"{r.expected_score:.3f} / {r.judge_score:.3f} ({r.score_difference:+.3f})", r.invalid)
        for r in result.cases
    ]
    rows.append(
        (
            "all cases",
            result.agreement,
            f"mean |diff| {result.mean_abs_score_difference:.3f}",
            sum(r.invalid for r in result.cases),
        )
    )
    for name, groups, root, invalid in rows:
        for key, figures in sorted(groups.items(), key=lambda item: item[0] != OVERALL):
            label = name if key == OVERALL else f"  {key}"
            leaves = f"{figures.leaves}" + (f" (+{invalid} invalid)" if key == OVERALL and invalid else "")
            table.add_row(
                Text(label),  # a case name is untrusted: never read as markup
                leaves,
                f"{figures.accuracy:.3f}",
                f"{figures.precision:.3f}",
                f"{figures.recall:.3f}",
                f"{figures.f1:.3f}",
                root if key == OVERALL else "",
            )
    return table
