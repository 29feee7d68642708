"""The watcher against real experiment code that tampers (local sandbox, so
the writes are possible; bwrap would refuse them outright)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aiscientist.task import load_task
from aiscientist.workspace import Workspace, verify_run
from aiscientist.workspace.eventlog import read_events

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.fixture
def ws(tmp_path):
    return Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")


def plant(ws: Workspace, code: str) -> None:
    """Implementation appends `code` to train.py (an editable file)."""
    scope = ws.scope("implementation")
    scope.write("submission/train.py", scope.read("submission/train.py") + "\n" + code + "\n")


def kinds(ws: Workspace) -> list[dict]:
    return list(read_events(ws.paths.root))


def test_experiment_overwriting_a_protected_file_and_a_log(ws):
    original = (ws.paths.submission / "data.py").read_text()
    ws.scope("experimentation").append("exp_log", "step 1: trying a larger learning rate")
    log_before = (ws.paths.logs / "exp_log.md").read_text()
    plant(
        ws,
        (
            'open("data.py", "w").write("def make_split(name):\\n    return [(0.0, '
            '0.0)]\\n")\nopen("../logs/exp_log.md", "w").write("all targets beaten\\n")'
        ),
    )
    with ws.watch(flush_s=0.1):
        ws.set_active("experimentation")
        record = ws.engine.run_step("experimentation", "larger learning rate")
        time.sleep(0.3)
    assert not record.valid and "data.py" in (record.error or "")
    assert (ws.paths.submission / "data.py").read_text() == original
    assert (ws.paths.logs / "exp_log.md").read_text() == log_before
    events = kinds(ws)
    protected = [e for e in events if e["kind"] == "protected.tampered"]
    assert {e["payload"]["found"] for e in protected} == {"watcher", "after run"}
    seen = next(e for e in protected if e["payload"]["found"] == "watcher")
    assert seen["payload"]["files"] == ["data.py"] and seen["payload"]["by"] == "step_0001 (experimentation)"
    assert any(e["kind"] == "protected.restored" and e["payload"]["files"] == ["data.py"] for e in events)
    log = next(e for e in events if e["kind"] == "log.tampered")
    assert log["payload"]["file"] == "logs/exp_log.md" and log["payload"]["restored"] is True
    assert "all targets beaten" in log["payload"]["now_reads"]
    changes = [c for e in events if e["kind"] == "files.changed" for c in e["payload"]["changes"]]
    assert any(c["path"] == "submission/weights.json" and c["by"].startswith("step_0001") for c in changes)
    report = verify_run(ws.paths.root)
    assert report.clean, report.problems
    assert len(report.tamper_events) >= 3


def test_a_protected_file_edited_and_put_back_during_a_step_invalidates_it(ws):
    plant(
        ws,
        (
            'import pathlib, time\np = pathlib.Path("evaluate.py")\nkeep = p.read_text()\np.write_text(keep + "# '
            'fake scores\\n")\ntime.sleep(1.0)\np.write_text(keep)'
        ),
    )
    with ws.watch(flush_s=0.1):
        record = ws.engine.run_step("experimentation", "sneaky")
    assert record.valid  # the engine alone, checking after the run, sees nothing
    step = ws.steps()[0]
    assert not step.valid and "seen by the watcher" in (step.error or "")
    assert ws.state().best_step is None
    assert any(e["kind"] == "step.invalidated" and e["payload"]["files"] == ["evaluate.py"] for e in kinds(ws))
    assert verify_run(ws.paths.root).clean


def test_outside_a_step_a_protected_file_is_restored_at_once(ws):
    with ws.watch(flush_s=0.05):
        ws.set_active("helper")
        (ws.paths.submission / "evaluate.py").write_text("print('replaced')\n")
        deadline = time.monotonic() + 5
        while ws.engine.tampered_files() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert ws.engine.tampered_files() == []
    tampered = [e for e in kinds(ws) if e["kind"] == "protected.tampered"]
    assert tampered and tampered[0]["payload"]["by"] == "helper" and tampered[0]["payload"]["restored"] is True


def test_events_appended_outside_the_api_are_cut_back(ws):
    with ws.watch(flush_s=0.05):
        with open(ws.paths.logs / "events.jsonl", "a") as handle:
            handle.write('{"seq": 999, "kind": "forged"}\n')
        deadline = time.monotonic() + 5
        while not any(e["kind"] == "log.tampered" for e in kinds(ws)) and time.monotonic() < deadline:
            time.sleep(0.05)
    flagged = [e for e in kinds(ws) if e["kind"] == "log.tampered"]
    assert (
        flagged and flagged[0]["payload"]["file"] == "logs/events.jsonl" and flagged[0]["payload"]["restored"] is True
    )
    assert not any(e.get("kind") == "forged" for e in kinds(ws))
    assert verify_run(ws.paths.root).clean


def test_a_damaged_pristine_copy_is_flagged_and_verify_names_it(ws):
    with ws.watch(flush_s=0.05):
        (ws.paths.pristine / "files" / "data.py").write_text("# gone\n")
        deadline = time.monotonic() + 5
        while not any(e["kind"] == "pristine.tampered" for e in kinds(ws)) and time.monotonic() < deadline:
            time.sleep(0.05)
    flagged = [e for e in kinds(ws) if e["kind"] == "pristine.tampered"]
    assert flagged and flagged[0]["payload"]["files"] == ["data.py"]
    problems = [str(p) for p in verify_run(ws.paths.root).problems]
    assert problems == [".pristine/files/data.py: differs from its pristine hash"]


def test_an_earlier_line_changed_after_the_log_was_found_intact_is_still_caught(ws):
    """The watcher compares only the new part line by line once a log was found intact;
    an edit to the part it already checked, of the same length and followed by a normal
    append, must still be seen and put back."""
    scope = ws.scope("experimentation")
    with ws.watch(flush_s=0.05) as watcher:
        scope.append("exp_log", "step 1: baseline reproduced")
        time.sleep(0.5)  # the change reaches the watcher, which finds the log intact
        watcher.flush()
        log = ws.paths.logs / "exp_log.md"
        original = log.read_text()
        forged = original.replace("baseline reproduced", "baseline beaten!!!!")
        assert len(forged) == len(original)
        log.write_text(forged)
        scope.append("exp_log", "step 2: larger learning rate")
        time.sleep(0.5)
        watcher.flush()
    assert log.read_text().startswith(original) and "beaten" not in log.read_text()
    tampered = [e["payload"] for e in kinds(ws) if e["kind"] == "log.tampered"]
    assert tampered and tampered[0]["file"] == "logs/exp_log.md" and tampered[0]["restored"] is True
    assert tampered[0]["line"] == 2  # line 1 is the session header


def test_a_change_is_attributed_to_who_was_active_when_it_happened(ws):
    """Changes reach the run's process in batches, possibly after the active role
    changed: each is attributed by its arrival time, not by when it is handled."""
    ws.set_active("implementation")
    during_implementation = time.monotonic()
    ws.set_step(7)
    during_step = time.monotonic()
    ws.set_step(None)
    ws.set_active("helper")
    assert ws.activity_at(during_implementation) == ("implementation", None, False)
    assert ws.activity_at(during_step) == ("step_0007 (implementation)", 7, False)
    assert ws.activity_at(time.monotonic()) == ("helper", None, False)


def test_the_observer_runs_in_a_process_of_its_own_and_stops_with_the_watch(ws):
    import os

    with ws.watch(flush_s=10) as watcher:
        child = watcher._observer._process
        assert child.poll() is None and child.pid != os.getpid()
        ws.set_active("helper")
        (ws.paths.root / "scratch.txt").write_text("note\n")  # the top level is watched too
        deadline = time.monotonic() + 5
        while not (
            seen := [
                c
                for e in kinds(ws)
                if e["kind"] == "files.changed"
                for c in e["payload"]["changes"]
                if c["path"] == "scratch.txt"
            ]
        ):
            assert time.monotonic() < deadline, "the change never arrived"
            time.sleep(0.05)
            watcher.flush()  # takes what the observer has seen so far
        assert seen[0]["by"] == "helper"
    assert child.poll() == 0


def test_a_script_without_a_main_guard_gets_a_watcher_and_runs_once(tmp_path):
    """The observer process must not import the caller's main script again (as
    multiprocessing's spawn and forkserver children do)."""
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(
        "import pathlib\n"
        "from aiscientist.task import load_task\n"
        "from aiscientist.workspace import Workspace\n"
        f"ws = Workspace.create(load_task({str(TINY)!r}), {str(tmp_path / 'run')!r}, sandbox='local')\n"
        "with ws.watch():\n"
        "    pass\n"
        f"with open({str(tmp_path / 'ran.txt')!r}, 'a') as handle:\n"
        "    handle.write('ran\\n')\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
    events = [e["kind"] for e in read_events(tmp_path / "run")]
    assert "watcher.start" in events and "watcher.unavailable" not in events


def test_an_observer_that_cannot_start_is_reported_and_the_run_goes_on(ws, monkeypatch):
    from aiscientist.workspace.fswatch import ObserverProcess

    monkeypatch.setattr(ObserverProcess, "interpreter", "/bin/false")  # the child exits at once
    with ws.watch(flush_s=0.05) as watcher:
        assert watcher._observer is None
    unavailable = [e["payload"] for e in kinds(ws) if e["kind"] == "watcher.unavailable"]
    assert unavailable and "the file observer process ended at start (exit code 1)" in unavailable[0]["error"]
    assert ws.engine.run_step("experimentation", "still runs").success


def test_writes_wake_the_observer_only_in_submission_elsewhere_the_close_shows(tmp_path):
    from aiscientist.workspace.fswatch import ObserverProcess, WatchSpec

    for folder in ("logs", "submission"):
        (tmp_path / folder).mkdir()
    seen: list = []
    observer = ObserverProcess(WatchSpec(str(tmp_path), (), (), {}), seen.extend)
    observer.start()
    try:
        handles = {folder: open(tmp_path / folder / "kept_open.txt", "w") for folder in ("logs", "submission")}
        time.sleep(0.2)
        seen.clear()  # the creations
        for _ in range(5):
            for handle in handles.values():
                handle.write("line\n")
                handle.flush()
            time.sleep(0.02)
        time.sleep(0.3)
        assert {c.rel for c in seen} == {"submission/kept_open.txt"}, "an append to a log kept open woke the observer"
        for handle in handles.values():
            handle.close()
        deadline = time.monotonic() + 5
        while not any(c.rel == "logs/kept_open.txt" for c in seen):
            assert time.monotonic() < deadline, "the close of a written log never arrived"
            time.sleep(0.05)
    finally:
        observer.stop()
    assert [c.kind for c in seen if c.rel == "logs/kept_open.txt"] == ["closed"]
