"""The append file kept open: lines from threads and forked processes sharing one
object stay whole, and an append after the path was replaced goes to the new file."""

from __future__ import annotations

import multiprocessing
import os
import threading

from aiscientist.util.appendfile import LockedAppendFile


def _append(log: LockedAppendFile, tag: str, count: int) -> None:
    for i in range(count):
        with log.locked() as fd:
            # two writes under one hold: only the lock keeps other writers out between them
            os.write(fd, f"{tag}:{i}:".encode())
            os.write(fd, b"x" * 300 + b"\n")


def test_threads_and_forked_processes_never_interleave_lines(tmp_path):
    log = LockedAppendFile(tmp_path / "logs" / "calls.jsonl")
    _append(log, "parent", 1)  # open before forking: the children must not share its lock
    context = multiprocessing.get_context("fork")
    procs = [context.Process(target=_append, args=(log, f"proc{n}", 150)) for n in range(2)]
    threads = [threading.Thread(target=_append, args=(log, f"thread{n}", 150)) for n in range(3)]
    for worker in (*procs, *threads):
        worker.start()
    for worker in (*procs, *threads):
        worker.join()
    assert all(p.exitcode == 0 for p in procs)
    lines = (tmp_path / "logs" / "calls.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 5 * 150
    assert all(line.endswith(":" + "x" * 300) and line.count(":") == 2 for line in lines)
    for tag in ("proc0", "proc1", "thread0", "thread1", "thread2"):
        assert [int(line.split(":")[1]) for line in lines if line.startswith(tag + ":")] == list(range(150))


def test_an_append_after_the_path_was_replaced_goes_to_the_new_file(tmp_path):
    path = tmp_path / "events.jsonl"
    log = LockedAppendFile(path)
    _append(log, "old", 1)
    path.rename(tmp_path / "moved.jsonl")
    _append(log, "new", 1)
    assert path.read_text().startswith("new:0:") and (tmp_path / "moved.jsonl").read_text().startswith("old:0:")
    path.unlink()
    _append(log, "again", 1)
    assert path.read_text().startswith("again:0:")
