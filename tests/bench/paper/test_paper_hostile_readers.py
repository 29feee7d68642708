"""The graders' readers against hostile folders (#27): JudgeEval cases and submissions that link
out, plant links where the grader writes, nest deep, or name themselves with escapes."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from aiscientist.cli.app import main
from aiscientist.util.untrusted import remove_tree
from tests.bench.paper.test_paper_judge_eval import _case
from tests.sandbox_backends import BACKENDS as ALL_BACKENDS

SECRET = "TOPSECRET-7f3a"


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A folder standing for the host's own files, outside every tree the grader reads."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "secret.json").write_text(json.dumps({"id": SECRET, "requirements": SECRET}))
    (folder / "victim.txt").write_text("original\n")
    with tarfile.open(folder / "backup.tar", "w") as tar:
        info = tarfile.TarInfo("submission/notes.txt")
        info.size = len(SECRET)
        tar.addfile(info, io.BytesIO(SECRET.encode()))
    return folder


def _grade_eval(cases: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["grade", "--judge-eval", str(cases), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _clone(cases: Path, name: str) -> Path:
    """A copy of the honest case toy/0 as toy/<name>."""
    source, copy = cases / "toy" / "0", cases / "toy" / name
    (copy / "grading").mkdir(parents=True)
    (copy / "grading" / "expected_result.json").write_bytes((source / "grading" / "expected_result.json").read_bytes())
    (copy / "submission.tar").write_bytes((source / "submission.tar").read_bytes())
    return copy


def test_cases_that_link_out_are_never_read(tmp_path: Path, host: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _case(tmp_path)
    linked_file = _clone(cases, "1")
    (linked_file / "grading" / "expected_result.json").unlink()
    (linked_file / "grading" / "expected_result.json").symlink_to(host / "secret.json")
    linked_dir = cases / "toy" / "2" / "grading"
    linked_dir.parent.mkdir()
    (host / "grading").mkdir()
    (host / "grading" / "expected_result.json").write_text((host / "secret.json").read_text())
    linked_dir.symlink_to(host / "grading")
    linked_tar = _clone(cases, "3")
    (linked_tar / "submission.tar").unlink()
    (linked_tar / "submission.tar").symlink_to(host / "backup.tar")
    code, printed = _grade_eval(cases, capsys)
    assert code == 0
    report = json.loads((cases / "judge_eval.json").read_text())
    assert [c["case"] for c in report["cases"]] == ["toy/0"]  # neither link is a case
    assert "symbolic link" in report["skipped"]["toy/3"]  # the archive link: skipped, named
    assert SECRET not in printed + (cases / "judge_eval.json").read_text()


def test_outputs_planted_as_links_are_not_written_through(
    tmp_path: Path, host: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _case(tmp_path)
    (cases / "judge_eval.json").symlink_to(host / "victim.txt")
    (cases / "graded").symlink_to(host)
    code, _ = _grade_eval(cases, capsys)
    assert code == 0
    assert (host / "victim.txt").read_text() == "original\n"
    assert sorted(os.listdir(host)) == ["backup.tar", "secret.json", "victim.txt"]
    assert not (cases / "judge_eval.json").is_symlink() and json.loads((cases / "judge_eval.json").read_text())
    assert (cases / "graded" / "toy" / "0" / "grade.json").is_file() and not (cases / "graded").is_symlink()


def test_a_deep_tree_and_a_damaged_archive_are_reported_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _case(tmp_path)
    fd = os.open(cases, os.O_RDONLY)
    for _ in range(1500):  # deeper than Python's recursion limit
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(fd)
    damaged = _clone(cases, "1")
    with tarfile.open(damaged / "submission.tar", "w:gz") as tar:
        info = tarfile.TarInfo("submission/big.bin")
        data = os.urandom(100_000)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    whole = (damaged / "submission.tar").read_bytes()
    (damaged / "submission.tar").write_bytes(whole[: len(whole) // 2])  # truncated
    try:
        code, printed = _grade_eval(cases, capsys)
    finally:
        remove_tree(cases, "d")  # pytest's own clean-up of old temporary folders recurses
    assert code == 0 and "Traceback" not in printed
    report = json.loads((cases / "judge_eval.json").read_text())
    assert [c["case"] for c in report["cases"]] == ["toy/0"]
    assert "not a readable tar archive" in report["skipped"]["toy/1"]


def test_a_case_name_cannot_forge_console_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _case(tmp_path)
    os.rename(cases / "toy" / "0", cases / "toy" / "0\nresearch · step 1∕1 · best 0.0001\x1b]0;pwned\x07")
    code, printed = _grade_eval(cases, capsys)
    assert code == 0
    assert "\x1b" not in printed and "\x07" not in printed
    assert not any(line.startswith("research") for line in printed.splitlines())


def test_grade_replaces_links_planted_at_its_output_names(
    tmp_path: Path, host: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "train.py").write_text("print(1)\n")
    for name in ("grade.json", "grade_summary.json"):
        (sub / name).symlink_to(host / "victim.txt")
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "paper.md").write_text("# p\n")
    leaf = {"id": "a", "requirements": "code", "weight": 1, "task_category": "Code Development", "sub_tasks": []}
    (paper / "rubric.json").write_text(json.dumps({"id": "r", "requirements": "r", "weight": 1, "sub_tasks": [leaf]}))
    assert main(["grade", str(sub), "--paper", str(paper), "--code-dev"]) == 0
    assert (host / "victim.txt").read_text() == "original\n"
    assert not (sub / "grade.json").is_symlink() and json.loads((sub / "grade.json").read_text())["id"] == "r"


def test_a_linked_paper_or_a_deep_rubric_is_a_clear_error(
    tmp_path: Path, host: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _case(tmp_path)
    _clone(cases, "1")
    paper = tmp_path / "papers" / "toy" / "paper.md"
    paper.unlink()
    paper.symlink_to(host / "secret.json")  # the judge's model would be sent a host file
    code, printed = _grade_eval(cases, capsys)
    assert code == 2 and "symbolic link" in printed and SECRET not in printed
    deep = tmp_path / "deep.json"
    deep.write_text('{"id": "r", "sub_tasks": ' * 5000 + "[]" + "}" * 5000)
    assert main(["rubric", "check", str(deep)]) == 2
    assert "nested deeper than" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ALL_BACKENDS[1:])  # bwrap and docker
def test_undecodable_names_a_reproduction_makes_are_stored_escaped(tmp_path: Path, backend: str) -> None:
    """A produced name with a byte that is not UTF-8 made the summary unwritable (#27)."""
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "reproduce.sh").write_text('printf x > "$(printf "evil\\377.txt")"\n')
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "paper.md").write_text("# p\n")
    leaf = {"id": "a", "requirements": "runs", "weight": 1, "task_category": "Code Execution", "sub_tasks": []}
    (paper / "rubric.json").write_text(json.dumps({"id": "r", "requirements": "r", "weight": 1, "sub_tasks": [leaf]}))
    assert main(["grade", str(sub), "--paper", str(paper), "--sandbox", backend]) == 0
    summary = json.loads((sub / "grade_summary.json").read_text())
    assert summary["reproduction"]["created"] == ["evil\\udcff.txt"]


def test_a_skipped_case_with_an_undecodable_name_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _case(tmp_path)
    odd = Path(os.fsdecode(os.fsencode(cases / "toy") + b"/\xff"))
    (odd / "grading").mkdir(parents=True)
    (odd / "grading" / "expected_result.json").write_text("{}")  # not a graded tree
    code, printed = _grade_eval(cases, capsys)
    assert code == 0 and "Traceback" not in printed
    report = json.loads((cases / "judge_eval.json").read_text())
    assert "\\xff" in report["skipped"]["toy/\\xff"]
