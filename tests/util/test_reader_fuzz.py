"""Hypothesis fuzz of hostile trees over the readers of whole folders someone else may hand us
(#27): a run folder for `verify` and the viewer, a JudgeEval folder for `grade --judge-eval`,
and symbolic links that chain through each other in an archive. The planting, the outside
sentinel and the blocking guard are the submission fuzz's (tests/experiment/test_hostile_fuzz.py);
here the hostile entries land anywhere in the folder, on the names its readers look for.
Properties: no exception escapes but the documented one, nothing outside changes, the sentinel
appears in nothing the host prints or writes, and an unpacked link never resolves outside."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from aiscientist.cli.app import main
from aiscientist.task import load_task
from aiscientist.util import archive, untrusted
from aiscientist.viewer import write_page
from aiscientist.workspace import Workspace, verify_run
from tests.bench.paper.test_paper_judge_eval import _case
from tests.experiment.test_hostile_fuzz import (
    FUZZ,
    HOSTILE_NAMES,
    JSON_BODIES,
    LINK_TARGETS,
    SECRET,
    TINY,
    _outside,
    _state,
    _text_out,
    no_blocking,
    plant,
)

FORGED_EVENT = (
    b'{"seq": 1, "ts": "t", "role": "x", "kind": "log.append", "payload": {"file": "../outside/secret.txt"}, '
    b'"prev_hash": "' + b"0" * 64 + b'", "hash": "x"}\n'
)
BODIES = st.one_of(st.sampled_from([*JSON_BODIES, FORGED_EVENT, b"[1]\n{}\n", b"{" * 10_000]), st.binary(max_size=200))


def _entries(files: list[bytes], areas: list[bytes], names: list[bytes]) -> st.SearchStrategy:
    """Hostile entries at the files the readers of a folder read, or at names they look for, or
    odd names, in its areas."""
    anywhere = st.tuples(st.sampled_from(areas), st.sampled_from(names + HOSTILE_NAMES)).map(lambda t: t[0] + t[1])
    rel = st.one_of(st.sampled_from(files), anywhere)
    return st.lists(
        st.one_of(
            st.tuples(st.just("file"), rel, BODIES),
            st.tuples(st.just("link"), rel, st.sampled_from(LINK_TARGETS)),
            st.tuples(st.just("fifo"), rel, st.none()),
            st.tuples(st.just("hard"), rel, st.just(b"@OUT@/secret.txt")),
            st.tuples(st.just("dir"), rel, st.none()),
            st.tuples(st.just("deep"), rel, st.integers(1, 1200)),
        ),
        min_size=1,
        max_size=8,
    )


def _plant_over(root: Path, spec: list, outside: Path) -> None:
    """Each entry replaces whatever is at its name (removed without following links)."""
    for entry in spec:
        untrusted.remove_tree(root, os.fsdecode(entry[1]))
        plant(os.fsencode(root), [entry], os.fsencode(outside))


def _no_secret(folder: Path) -> None:
    for node in untrusted.walk(folder).files():
        try:
            data = untrusted.read_file(folder, node.rel, 256 << 20)  # what the host wrote has one link
        except untrusted.Unreadable:
            continue
        assert SECRET not in data, f"the sentinel leaked into {node.rel!r}"


RUN_FILES = [
    b"logs/events.jsonl",
    b"logs/exp_log.md",
    b"experiments/step_0001/step.json",
    b"experiments/step_0001/diff.patch",
    b"experiments/step_0002",
    b"result.json",
    b"state/events_head.json",
    b"state/tree.json",
    b".pristine/manifest.json",
    b"plan/prioritized_tasks.md",
    b"task/task.json",
]
RUN_AREAS = [b"", b"logs/", b"experiments/", b"experiments/step_0001/", b"plan/", b"state/", b".pristine/", b"task/"]
RUN_NAMES = [
    b"events.jsonl",
    b"exp_log.md",
    b"step.json",
    b"diff.patch",
    b"step_0002",
    b"result.json",
    b"run.json",
    b"events_head.json",
    b"manifest.json",
    b"tree.json",
    b"task.json",
    b"prioritized_tasks.md",
    b"journal.jsonl",
    b"run.html",
]


@settings(FUZZ, max_examples=25)
@given(spec=_entries(RUN_FILES, RUN_AREAS, RUN_NAMES))
@example(spec=[("file", b"logs/events.jsonl", JSON_BODIES[1])])  # a deep line: RecursionError before #27
@example(spec=[("link", b"experiments/step_0001/diff.patch", LINK_TARGETS[0])])  # shown on the page before #27
def test_verify_and_the_viewer_survive_a_hostile_run_folder(spec: list) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-run-") as base:
        outside = _outside(Path(base))
        root = Path(base) / "run"
        Workspace.create(load_task(TINY), root, sandbox="local")
        (root / "experiments" / "step_0001").mkdir()
        before = _state(outside)
        _plant_over(root, spec, outside)
        with no_blocking():
            report = verify_run(root)
            _text_out(*report.problems, *report.tamper_events)
            page = write_page(root)
            _text_out(page.read_text())
        assert _state(outside) == before
        untrusted.remove_tree(Path(base), "run")  # deep trees: pytest's own clean-up would recurse


CASE_FILES = [b"toy/0/grading/expected_result.json", b"toy/0/submission.tar", b"toy/0/grading", b"judge_eval.json"]
CASE_AREAS = [b"", b"toy/", b"toy/0/", b"toy/0/grading/", b"toy/1/", b"toy/1/grading/", b"toy/0/submission/"]
CASE_NAMES = [b"grading", b"expected_result.json", b"submission.tar", b"submission", b"judge_eval.json", b"graded"]


@settings(FUZZ, max_examples=20)
@given(spec=_entries(CASE_FILES, CASE_AREAS, CASE_NAMES))
def test_judge_eval_survives_a_hostile_cases_folder(spec: list) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-cases-") as base:
        outside = _outside(Path(base))
        cases = _case(Path(base))
        before = _state(outside)
        _plant_over(cases, spec, outside)
        printed = io.StringIO()
        with no_blocking(), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            code = main(["grade", "--judge-eval", str(cases)])
        assert code in (0, 2), printed.getvalue()  # graded, or a clear error (no case left)
        _text_out(printed.getvalue())
        assert "Traceback" not in printed.getvalue()
        assert _state(outside) == before
        _no_secret(cases)
        untrusted.remove_tree(Path(base), "judge_eval")


LINK_NAMES = ["a", "a/b", "a/b/c", "a/b/c/L", "L", "x", "y", "a/y"]
LINK_TARGETS_IN = ["..", "../..", "../../..", ".", "a", "a/b/c/L/..", "L/..", "L/../..", "x/..", "y/../..", "a/b"]
links = st.tuples(
    st.sampled_from(["dir", "sym", "sym", "file"]), st.sampled_from(LINK_NAMES), st.sampled_from(LINK_TARGETS_IN)
)


@settings(FUZZ, max_examples=150)
@given(specs=st.lists(links, min_size=1, max_size=8))
@example(specs=[("dir", "a/b/c", ""), ("sym", "a/b/c/L", "../../.."), ("sym", "x", "a/b/c/L/..")])
def test_no_unpacked_link_resolves_outside_through_other_links(specs: list) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-links-") as base:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for kind, name, target in specs:
                info = tarfile.TarInfo(name)
                info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "file": tarfile.REGTYPE}[kind]
                info.linkname = target if kind == "sym" else ""
                tar.addfile(info, io.BytesIO(b"") if kind == "file" else None)
        (Path(base) / "a.tar").write_bytes(buffer.getvalue())
        dest = Path(base) / "out"
        try:
            written = archive.unpack(Path(base) / "a.tar", dest)
        except archive.ArchiveError:
            return
        inside = os.path.realpath(dest)
        for rel in written:
            resolved = os.path.realpath(dest / rel)
            assert resolved == inside or resolved.startswith(inside + os.sep), f"{rel} resolves to {resolved}"
