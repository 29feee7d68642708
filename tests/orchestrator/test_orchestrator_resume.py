"""An interrupted run (Ctrl-C, then SIGKILL mid-step) resumes with no step lost or repeated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from aiscientist.workspace import verify_run

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"


def _solve(*args: str) -> list[str]:
    return [sys.executable, "-m", "aiscientist", "solve", *args]


def _start(args: list[str], cwd: Path, env: dict) -> subprocess.Popen:
    # Ctrl-C as a terminal delivers it, even if something earlier in this test process set
    # SIGINT to be ignored (inherited)
    restore = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    return subprocess.Popen(
        _solve(*args),
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=restore,
    )


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 180
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before it could be interrupted: " + (
        proc.stdout.read() if proc.stdout else ""
    )


def test_ctrl_c_then_sigkill_then_resume_finishes_the_run(tmp_path):
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    # Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops cleanly
    proc = _start(
        [
            str(TINY),
            "--model",
            "offline",
            "--steps",
            "5",
            "--run-dir",
            str(run_dir),
            "--set",
            "sandbox=local",
            "--set",
            "specialists.readers=[code]",
        ],
        tmp_path,
        env,
    )
    _wait_for(
        run_dir / "experiments" / "step_0001" / "step.json", proc
    )  # early: four steps of slack on a loaded machine
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert f"solve --resume {run_dir}" in out

    # a resumed run killed with SIGKILL while step 2 or 3 runs (solver and experiment alike)
    proc = _start(["--resume", str(run_dir)], tmp_path, env)
    _wait_for(run_dir / "experiments" / "step_0002", proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not (run_dir / "result.json").exists()

    done = subprocess.run(
        _solve("--resume", str(run_dir)), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout + done.stderr

    steps = [json.loads(p.read_text()) for p in sorted((run_dir / "experiments").glob("step_*/step.json"))]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    assert sorted(p.name for p in (run_dir / "experiments").iterdir()) == [f"step_000{n}" for n in range(1, 6)]
    exp_log = (run_dir / "logs" / "exp_log.md").read_text()
    assert [exp_log.count(f"[step 000{n}]") for n in range(1, 6)] == [1] * 5
    events = [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]
    # every step finished exactly once; one experiment per experimentation call across the kills
    ends = [e["payload"]["step"] for e in events if e["kind"] == "experiment.end"]
    assert ends == [1, 2, 3, 4, 5]
    runs = [e["kind"] for e in events if e["kind"].startswith("run.")]
    assert runs == ["run.start", "run.interrupted", "run.resume", "run.resume", "run.end"]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["steps_total"] == 5 and result["stop_reason"] == "submitted"

    report = verify_run(run_dir)
    assert report.clean, report.problems


def test_resume_redoes_a_step_whose_record_was_torn(tmp_path):
    """A kill between creating step.json and writing it leaves an empty record (and a
    killed snapshot a half-copied blob): resume repairs both and redoes the step."""
    from aiscientist.config import RunConfig
    from aiscientist.orchestrator import solve
    from aiscientist.orchestrator.run import RunInfo

    run_dir = tmp_path / "run"
    solve(TINY, run_dir, RunConfig(sandbox="local", specialists={"readers": ["code"]}), model="offline", steps=2)
    (run_dir / "experiments" / "step_0002" / "step.json").write_text("")  # as an interrupted write leaves it
    (run_dir / "state" / "snapshots" / "blobs" / ".incoming-999").write_bytes(b"half")  # as a killed copy leaves it
    info = RunInfo.model_validate_json((run_dir / "state" / "run.json").read_text())
    (run_dir / "state" / "run.json").write_text(info.model_copy(update={"finished": False}).model_dump_json())
    (run_dir / "result.json").unlink()

    result = solve(None, run_dir, steps=3)
    assert [json.loads(p.read_text())["step"] for p in sorted((run_dir / "experiments").glob("step_*/step.json"))] == [
        1,
        2,
        3,
    ]
    assert result.steps_total == 3
    events = [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]
    assert [e["payload"]["step"] for e in events if e["kind"] == "step.record_torn"] == [2]
    removed = [e["payload"]["path"] for e in events if e["kind"] == "snapshot.incoming_removed"]
    assert removed == ["blobs/.incoming-999"]
    assert not (run_dir / "state" / "snapshots" / "blobs" / ".incoming-999").exists()
    assert verify_run(run_dir).clean
