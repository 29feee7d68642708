"""A markdown-log append cut off between its text and its event (a killed writer, a Ctrl-C): the
next writer records it, text written outside the API is still reported, and Ctrl-C waits."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from aiscientist.task import load_task
from aiscientist.util.interrupts import deferred_interrupts
from aiscientist.workspace import Workspace, verify_run
from aiscientist.workspace.eventlog import EventLog

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


class Killed(BaseException):
    """The writer's death at the worst moment: after the log's text, before its event."""


def _events(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "logs" / "events.jsonl").read_text().splitlines()]


def test_an_append_cut_off_before_its_event_is_recorded_by_the_next_writer(tmp_path, monkeypatch):
    root = tmp_path / "run"
    ws = Workspace.create(load_task(TINY), root, sandbox="local")
    ws.scope("experimentation").append("exp_log", "[step 0001] kept")
    real = EventLog._append_event

    def killed_at_the_event(self, fd, role, kind, payload, log_size=None):
        if kind == "log.append":
            raise Killed
        return real(self, fd, role, kind, payload, log_size)

    monkeypatch.setattr(EventLog, "_append_event", killed_at_the_event)
    with pytest.raises(Killed):
        ws.scope("experimentation").append("exp_log", "[step 0002] cut off")
    monkeypatch.setattr(EventLog, "_append_event", real)
    assert "[step 0002] cut off" in (root / "logs" / "exp_log.md").read_text()
    assert not verify_run(root).clean  # unrecorded: it reads as text written outside the API

    resumed = Workspace.open(root)
    with resumed.watch():
        resumed.scope("experimentation").append("exp_log", "[step 0003] after the resume")
    recovered = [e["payload"] for e in _events(root) if e["payload"].get("recovered")]
    assert [r["file"] for r in recovered] == ["logs/exp_log.md"]
    text = (root / "logs" / "exp_log.md").read_text()
    assert [text.count(f"[step 000{n}]") for n in (1, 2, 3)] == [1, 1, 1]
    report = verify_run(root)
    assert report.clean, report.problems


def test_text_written_outside_the_api_is_not_taken_for_a_cut_off_append(tmp_path):
    root = tmp_path / "run"
    ws = Workspace.create(load_task(TINY), root, sandbox="local")
    ws.scope("experimentation").append("exp_log", "[step 0001] kept")
    with open(root / "logs" / "exp_log.md", "a") as log:
        log.write("[step 0009] forged: best ever\n")
    resumed = Workspace.open(root)
    assert resumed.events.complete_appends(["logs/exp_log.md"]) == []
    assert not [e for e in _events(root) if e["payload"].get("recovered")]
    assert not verify_run(root).clean


def test_ctrl_c_inside_the_block_is_raised_when_it_ends():
    order = []
    launched_with = signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's '&' job ignores SIGINT
    try:
        with pytest.raises(KeyboardInterrupt):
            with deferred_interrupts():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs between bytecodes: it would have raised here
                order.append("block ended")
        assert order == ["block ended"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, launched_with)


def test_an_ignored_ctrl_c_stays_ignored_after_the_block():
    launched_with = signal.signal(signal.SIGINT, signal.SIG_IGN)  # e.g. a run started with nohup or as a '&' job
    try:
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, launched_with)
