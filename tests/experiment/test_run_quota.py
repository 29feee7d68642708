"""Issue 39, item 3: one run-wide disk and file-count quota (`sandbox.run_disk_mb`,
`sandbox.run_max_files`) over every area sandboxed code writes besides a step's submission,
and host records of untrusted data capped. Each test goes through a product path (the shell
tool, the hidden test with result.json, a step's evidence) and failed on the code before it."""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

from aiscientist.agent.outcome import StopReason
from aiscientist.agent.shell import run_shell
from aiscientist.experiment import evidence
from aiscientist.experiment.finish import finish_run
from aiscientist.records.causes import FailureCause
from aiscientist.records.result import RunResult
from aiscientist.records.step import HYPOTHESIS_CHARS, StepRecord
from aiscientist.sandbox import bwrap_works
from aiscientist.task import load_task
from aiscientist.util import untrusted
from aiscientist.workspace import Workspace
from aiscientist.workspace.eventlog import read_events

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "task.yaml"
SANDBOX = "bwrap" if bwrap_works() else "local"


def _workspace(tmp_path: Path, **sandbox: object) -> Workspace:
    task = load_task(TINY)
    task = task.model_copy(update={"sandbox": task.sandbox.model_copy(update=sandbox)})
    ws = Workspace.create(task, tmp_path / "run", sandbox=SANDBOX)
    ws.engine.ensure_setup()
    return ws


def _quota_events(ws: Workspace) -> list[dict]:
    return [e for e in read_events(ws.paths.root) if e.get("kind") == "quota.exceeded"]


def test_a_shell_call_that_fills_scratch_is_stopped_at_the_run_quota(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, run_disk_mb=1)
    out = run_shell(ws, "helper", "head -c 3000000 /dev/zero > ../scratch/big.bin && echo wrote")
    assert "[exit 1]" in out and FailureCause.DISK_QUOTA.value in out and "sandbox.run_disk_mb" in out
    assert "scratch/" in out and not (ws.paths.root / "scratch" / "big.bin").exists()  # the excess is gone
    assert _quota_events(ws)
    ok = run_shell(ws, "helper", "head -c 1000 /dev/zero > ../scratch/small.bin")
    assert ok.startswith("[exit 0]") and (ws.paths.root / "scratch" / "small.bin").is_file()


def test_many_files_and_folders_count_against_the_run_quota(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, run_max_files=50)
    out = run_shell(ws, "helper", "cd ../scratch && mkdir -p d && for i in $(seq 200); do : > d/$i; mkdir e$i; done")
    assert FailureCause.DISK_QUOTA.value in out and "sandbox.run_max_files" in out
    left = untrusted.walk(ws.paths.root / "scratch").nodes
    assert len(left) <= 50  # brought back within the quota


def test_new_files_in_the_submission_count_between_steps(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, run_disk_mb=1)
    command = "head -c 700000 /dev/zero > junk1.bin && head -c 700000 /dev/zero > junk2.bin && echo '#' >> config.py"
    out = run_shell(ws, "flat", command)
    assert FailureCause.DISK_QUOTA.value in out and "submission/junk" in out
    assert len(list(ws.paths.submission.glob("junk*.bin"))) == 1  # the excess only
    assert (ws.paths.submission / "config.py").read_text().endswith("#\n")  # the baseline's files: the step quota's


def test_a_hidden_test_that_writes_a_huge_file_fails_cleanly_with_disk_quota(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, run_disk_mb=2)  # the step's own quota (disk_mb, 256) lets it write 3 MB
    train = ws.paths.submission / "train.py"
    extra = """
    with open("blob.bin", "wb") as f:
        f.write(b"\\0" * 3_000_000)
    """
    train.write_text(train.read_text() + "\n" + textwrap.dedent(extra))
    record = ws.engine.run_step("tester", "write a large file")
    assert record.success and record.valid, record.error
    before = set(Path(tempfile.gettempdir()).glob("aisci-test-*"))
    result = finish_run(ws, "tester", [record], StopReason.FINISHED)
    saved = RunResult.model_validate_json(ws.paths.result.read_text())  # result.json is written
    assert saved.test is not None and result.test is not None and not saved.test.success
    assert saved.test.cause == FailureCause.DISK_QUOTA and "sandbox.run_disk_mb" in (saved.test.error or "")
    assert "hidden test's copy" in (saved.test.error or "")
    assert set(Path(tempfile.gettempdir()).glob("aisci-test-*")) <= before  # the copy is gone


def test_a_giant_edit_yields_capped_evidence(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    big = "".join(f"VALUE_{i} = {i}\n" for i in range(400_000))  # ~6 MB of text, within the step quota
    config = ws.paths.submission / "config.py"
    config.write_text(config.read_text() + big)
    record = ws.engine.run_step("tester", "a giant edit")
    diff = ws.paths.step_dir(record.step) / "diff.patch"
    assert diff.stat().st_size < evidence.DIFF_BYTES
    assert "config.py is too large to diff" in diff.read_text()
    assert (ws.paths.step_code(record.step) / "config.py").stat().st_size == config.stat().st_size  # kept whole


def test_many_edited_files_cut_the_diff_and_name_what_is_left_out(tmp_path: Path) -> None:
    task = load_task(TINY)
    task = task.model_copy(update={"editable": [*task.editable, "notes/*.txt"]})
    ws = Workspace.create(task, tmp_path / "run", sandbox=SANDBOX)
    ws.engine.ensure_setup()
    notes = ws.paths.submission / "notes"
    notes.mkdir()
    for i in range(12):  # 12 files of 900 KB each: every one is diffed alone, not all of them together
        (notes / f"{i:02d}.txt").write_text("".join(f"line {i} {j}\n" for j in range(70_000)))
    record = ws.engine.run_step("tester", "many edits")
    text = (ws.paths.step_dir(record.step) / "diff.patch").read_text()
    assert len(text.encode()) < evidence.DIFF_BYTES + 10_000
    assert "# diff cut at" in text and "notes/11.txt" in text.split("# diff cut at", 1)[1]


def test_a_huge_hypothesis_is_capped_in_the_record(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    record = ws.engine.run_step("tester", "h" * 2_000_000)
    saved = StepRecord.model_validate_json(ws.paths.step_record(record.step).read_text())
    assert len(saved.hypothesis) < HYPOTHESIS_CHARS + 100 and "characters left out" in saved.hypothesis
