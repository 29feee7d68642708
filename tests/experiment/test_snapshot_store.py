"""The submission's snapshots (our own store, no git on the untrusted tree) and a
step's disk quota, through the real engine on each sandbox backend."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from aiscientist.experiment import snapshots
from aiscientist.records.causes import FailureCause
from aiscientist.task import load_task
from aiscientist.workspace import Workspace, verify_run
from tests.sandbox_backends import BACKENDS

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"
SANDBOXED = [b for b in BACKENDS if b != "local"]


def _step(tmp_path: Path, backend: str, extra: str, **sandbox: object):
    """One step of the tiny task whose train.py trains, then runs `extra`."""
    task = load_task(TINY)
    if sandbox:
        task = task.model_copy(update={"sandbox": task.sandbox.model_copy(update=sandbox)})
    ws = Workspace.create(task, tmp_path / "run", sandbox=backend)
    train = ws.paths.submission / "train.py"
    train.write_text(train.read_text() + "\n" + textwrap.dedent(extra))
    return ws, ws.engine.run_step("tester", "test")


@pytest.mark.parametrize("backend", SANDBOXED)
def test_an_embedded_repository_filter_runs_no_host_code(tmp_path: Path, backend: str) -> None:
    marker = tmp_path / "host-marker"
    payload = f"""
    import os, subprocess
    os.makedirs("vendor/.git/hooks", exist_ok=True)
    for folder in ("vendor", "."):
        with open(folder + "/.gitattributes", "w") as f:
            f.write("* filter=evil diff=evil\\n")
    with open("vendor/.git/config", "w") as f:
        f.write('[core]\\n\\tfsmonitor = touch {marker}\\n[filter "evil"]\\n\\tclean = touch {marker}\\n'
                '\\tsmudge = touch {marker}\\n\\trequired = true\\n[diff "evil"]\\n\\ttextconv = touch {marker}\\n')
    open("vendor/.git/HEAD", "w").write("ref: refs/heads/main\\n")
    os.makedirs("vendor/.git/objects", exist_ok=True)
    os.makedirs("vendor/.git/refs", exist_ok=True)
    open("vendor/lib.txt", "w").write("data\\n")
    """
    ws, record = _step(tmp_path, backend, payload)
    assert (ws.paths.submission / "vendor" / ".git" / "config").is_file()  # the attack was in place
    best = ws.engine.snapshot(snapshots.BEST_TAG, "new best")  # what the host does on a new best step
    stat = snapshots.diff_stat(ws.paths, snapshots.BASELINE_TAG, ["train.py", "vendor/lib.txt"])
    snapshots.restore(ws.paths, snapshots.BASELINE_TAG, ["train.py"])
    assert not marker.exists()
    assert not any(".git" in rel.split("/") for rel in best.files)  # nested git folders are never stored
    assert (
        "train.py" in stat and best.files["train.py"].sha != snapshots.load(ws.paths, "baseline").files["train.py"].sha
    )
    assert snapshots.text_of(ws.paths, "baseline", "train.py") == (ws.paths.submission / "train.py").read_text()
    assert not ws.paths.git_dir.exists() and verify_run(ws.paths.root).clean


def test_restore_never_writes_through_a_link(tmp_path: Path) -> None:
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    train = ws.paths.submission / "train.py"
    train.unlink()
    train.symlink_to(outside)
    assert snapshots.restore(ws.paths, "baseline", ["train.py", "config.py"]) == ["train.py", "config.py"]
    assert outside.read_text() == "host file\n" and not train.is_symlink()
    assert train.read_text() == snapshots.text_of(ws.paths, "baseline", "train.py")


@pytest.mark.parametrize("backend", SANDBOXED)
def test_a_step_over_its_disk_quota_is_invalid_and_its_excess_removed(tmp_path: Path, backend: str) -> None:
    payload = """
    for i in range(3):
        with open(f"blob{i}.bin", "wb") as f:
            f.write(b"\\0" * 700_000)
    """
    ws, record = _step(tmp_path, backend, payload, disk_mb=1)
    assert not record.valid and not record.success and record.cause == FailureCause.DISK_QUOTA
    assert "sandbox.disk_mb" in (record.error or "")
    assert not list(ws.paths.submission.glob("blob*.bin"))
    best = ws.engine.snapshot(snapshots.BEST_TAG, "best")
    assert not any(rel.startswith("blob") for rel in best.files)


@pytest.mark.parametrize("backend", SANDBOXED)
def test_a_step_over_its_file_count_is_invalid(tmp_path: Path, backend: str) -> None:
    payload = """
    import os
    os.makedirs("many", exist_ok=True)
    for i in range(40):
        open(f"many/{i}.txt", "w").write("x")
    """
    ws, record = _step(tmp_path, backend, payload, max_files=20)
    assert record.cause == FailureCause.DISK_QUOTA and "sandbox.max_files" in (record.error or "")
    assert not list((ws.paths.submission / "many").glob("*.txt"))
    ok_ws, ok = _step(tmp_path / "ok", backend, "", max_files=20)
    assert ok.valid and ok.success and ok.cause is None  # an honest step stays within the defaults


def test_large_outputs_are_never_snapshotted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    monkeypatch.setattr(snapshots, "FILE_CAP_BYTES", 1000)
    (ws.paths.submission / "config.py").write_text("# " + "x" * 2000 + "\n")
    (ws.paths.submission / "outputs.bin").write_bytes(os.urandom(500))
    best = ws.engine.snapshot(snapshots.BEST_TAG, "best")
    assert "config.py" in best.skipped and "outputs.bin" not in best.files  # over the cap; not the code
    assert "data.py" in best.files  # the baseline's own files are kept whatever their size
