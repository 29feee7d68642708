"""Append-only logs: racing writers, and verify naming the first bad line."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from aiscientist.cli import verify as command
from aiscientist.task import load_task
from aiscientist.workspace import EventLog, Workspace, verify_run
from aiscientist.workspace.eventlog import read_events

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"
PROCS, PER_PROC = 4, 500


def cli_main(argv: list[str]) -> int:
    """`aiscientist verify RUN_DIR` through the subcommand module itself."""
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return command.run(parser.parse_args(argv[1:]))


def _writer(root: str, proc: int) -> None:
    log = EventLog(Path(root))
    session = None
    for n in range(PER_PROC):
        if n % 5 == 0:  # every fifth append goes to a markdown log (itself one event)
            _, session = log.append_text(
                f"proc{proc}", "logs/exp_log.md", f"proc {proc} note {n}\nsecond line {n}", session
            )
        else:
            log.record(f"proc{proc}", "race", {"proc": proc, "n": n})


def test_four_processes_racing_lose_and_interleave_nothing(tmp_path):
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    start = sum(1 for _ in read_events(ws.paths.root))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(ws.paths.root), p)) for p in range(PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    report = verify_run(ws.paths.root)
    assert report.clean, report.problems
    assert report.events == start + PROCS * PER_PROC
    events = list(read_events(ws.paths.root))
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    seen = {(e["payload"]["proc"], e["payload"]["n"]) for e in events if e["kind"] == "race"}
    assert len(seen) == PROCS * PER_PROC * 4 // 5
    text = (ws.paths.logs / "exp_log.md").read_text()
    for p in range(PROCS):  # each process's notes stay whole, in one session of its own
        for n in range(0, PER_PROC, 5):
            assert f"proc {p} note {n}\nsecond line {n}\n" in text
    assert text.count("=== Session ") == PROCS


def test_threads_appending_through_scopes(tmp_path):
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")

    def work(i: int) -> None:
        scope = ws.scope("implementation")
        for n in range(50):
            scope.append("impl_log", f"thread {i} line {n}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = verify_run(ws.paths.root)
    assert report.clean, report.problems
    assert report.log_appends == 200
    text = (ws.paths.logs / "impl_log.md").read_text()
    assert text.count("=== Session ") == 4
    assert all(f"thread {i} line {n}\n" in text for i in range(4) for n in range(50))


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    """A run folder with a few dozen events and two markdown logs."""
    root = tmp_path_factory.mktemp("logged") / "run"
    ws = Workspace.create(load_task(TINY), root, sandbox="local")
    for i in range(3):
        ws.scope("experimentation").append("exp_log", f"experiment note {i}\nresult line {i}")
        ws.scope("implementation").append("impl_log", f"changed thing {i}\nwhy {i}")
        ws.events.record("system", "note", {"i": i})
    assert verify_run(root).clean
    return root


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def truncate(path: Path, k: int) -> None:
    path.write_bytes(b"".join(_lines(path)[: k - 1]))


def truncate_mid_line(path: Path, k: int) -> None:
    lines = _lines(path)
    path.write_bytes(b"".join(lines[: k - 1]) + lines[k - 1][: len(lines[k - 1]) // 2])


def edit_byte(path: Path, k: int) -> None:
    lines = _lines(path)
    line = bytearray(lines[k - 1])
    i = len(line) // 2
    line[i] = ord("7") if line[i] != ord("7") else ord("8")
    lines[k - 1] = bytes(line)
    path.write_bytes(b"".join(lines))


def delete(path: Path, k: int) -> None:
    lines = _lines(path)
    del lines[k - 1]
    path.write_bytes(b"".join(lines))


def reorder(path: Path, k: int) -> None:
    lines = _lines(path)
    lines[k - 1], lines[k] = lines[k], lines[k - 1]
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    "mutation", [truncate, truncate_mid_line, edit_byte, delete, reorder], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("log", ["logs/events.jsonl", "logs/exp_log.md", "logs/impl_log.md"])
def test_verify_names_the_first_damaged_line(logged_run, tmp_path, log, mutation):
    copy = tmp_path / "copy"
    shutil.copytree(logged_run, copy, symlinks=True)
    path = copy / log
    k = 4  # damage the fourth line
    assert len(_lines(path)) > k
    mutation(path, k)
    report = verify_run(copy)
    assert not report.clean
    first = report.problems[0]
    assert (first.file, first.line) == (log, k), report.problems
    assert cli_main(["verify", str(copy)]) == 1


def test_verify_passes_a_clean_run_and_catches_a_changed_protected_file(logged_run, tmp_path, capsys):
    assert cli_main(["verify", str(logged_run)]) == 0
    assert "clean" in capsys.readouterr().out
    copy = tmp_path / "copy"
    shutil.copytree(logged_run, copy, symlinks=True)
    (copy / "submission" / "evaluate.py").write_text("print('pwned')\n")
    assert cli_main(["verify", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "submission/evaluate.py: differs from its pristine hash" in out


def test_text_appended_outside_the_api_is_named(logged_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(logged_run, copy, symlinks=True)
    lines = len(_lines(copy / "logs" / "exp_log.md"))
    with open(copy / "logs" / "exp_log.md", "a") as handle:
        handle.write("all experiments succeeded\n")
    event = json.loads(_lines(copy / "logs" / "events.jsonl")[-1])
    event["seq"] += 1
    with open(copy / "logs" / "events.jsonl", "a") as handle:
        handle.write(json.dumps(event) + "\n")
    problems = {p.file: p for p in verify_run(copy).problems}
    assert problems["logs/exp_log.md"].line == lines + 1
    assert problems["logs/events.jsonl"].line == event["seq"]


def test_a_line_torn_by_a_dead_writer_is_dropped_and_recorded(tmp_path):
    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    with open(ws.paths.logs / "events.jsonl", "ab") as handle:
        handle.write(b'{"seq": 3, "ts": "2026-')  # a process killed inside its write
    assert not verify_run(ws.paths.root).clean
    event = ws.events.record("system", "after.crash", {})
    repaired = list(read_events(ws.paths.root))[-1]
    assert repaired["kind"] == "log.repaired" and repaired["payload"]["dropped_bytes"] == 23
    assert repaired["seq"] == event["seq"] + 1
    assert verify_run(ws.paths.root).clean


def test_verify_command_line(logged_run, tmp_path):
    """The real program once (it imports every subcommand, so it is slow)."""
    copy = tmp_path / "copy"
    shutil.copytree(logged_run, copy, symlinks=True)
    delete(copy / "logs" / "impl_log.md", 2)
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "verify", str(copy)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "logs/impl_log.md line 2" in done.stdout, done.stderr


def test_an_entry_offered_again_after_an_interruption_is_written_once(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from aiscientist.specialists.base import RECENT_LOG_BYTES, append_once

    ws = Workspace.create(load_task(TINY), tmp_path / "run", sandbox="local")
    ctx, scope, log = SimpleNamespace(ws=ws), ws.scope("implementation"), ws.paths.logs / "impl_log.md"
    entry = "[call d1.c0] mode: full\ntask: add a warm-up"
    append_once(ctx, scope, "impl_log", "[call d1.c0] mode: full", entry)
    append_once(ctx, scope, "impl_log", "[call d1.c0] mode: full", entry)  # the same call, resumed
    assert log.read_text().count("[call d1.c0]") == 1
    # only the recent part is looked at, so the check does not grow with the log
    for i in range(RECENT_LOG_BYTES // 1000 + 1):
        scope.append("impl_log", f"[call d{i + 2}.c0] mode: fix\n" + "x" * 1000)
    append_once(ctx, scope, "impl_log", "[call d1.c0] mode: full", entry)
    assert log.read_text().count("[call d1.c0]") == 2
    assert verify_run(ws.paths.root).clean
