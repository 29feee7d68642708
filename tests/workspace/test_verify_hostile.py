"""`verify` on a hostile run folder (#27): whoever tampered with it can also forge a valid hash
chain, so every event and file is untrusted input. Each case must end in a report that names
the problem, with no exception, no file read outside the folder and no forged console line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aiscientist.task import load_task
from aiscientist.workspace import Workspace, verify_run
from aiscientist.workspace.eventlog import event_hash

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "run"
    ws = Workspace.create(load_task(TINY), root, sandbox="local")
    ws.scope("experimentation").append("exp_log", "a note")
    assert verify_run(root).clean
    return root


def forge(root: Path, kind: str, payload: object) -> None:
    """Append an event with a valid hash chain (no secret protects the chain)."""
    log = root / "logs" / "events.jsonl"
    last = json.loads(log.read_bytes().splitlines()[-1])
    event = {"seq": last["seq"] + 1, "ts": "t", "role": "x", "kind": kind, "payload": payload}
    event["prev_hash"] = last["hash"]
    event["hash"] = event_hash(event)
    with open(log, "a") as handle:
        handle.write(json.dumps(event) + "\n")


def _host(root: Path) -> Path:
    return root.parent / "host_secret.json"


MUTATIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a step folder that is not a number": (lambda r: (r / "experiments" / "step_1x").mkdir(), ""),
    "a 100k-deep event line": (
        lambda r: (r / "logs" / "events.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n"),
        "nested too deep",
    ),
    "a log append without its fields": (lambda r: forge(r, "log.append", {}), "not an event verify can read"),
    "a log append naming a file outside": (
        lambda r: forge(r, "log.append", {"file": "../host_secret.json", "offset": 0, "length": 1, "lines": ["x"]}),
        "not a path inside the folder",
    ),
    "a step end whose step is text": (
        lambda r: forge(r, "experiment.end", {"step": "abc", "files": {}}),
        "not an event verify can read",
    ),
    "a tamper event whose payload is a list": (lambda r: forge(r, "protected.tampered", ["x"]), "payload"),
    "a chain head that is a list": (lambda r: (r / "state" / "events_head.json").write_text("[1]"), "chain head"),
    "a manifest that is a list, recorded in the chain": (
        lambda r: (
            (r / ".pristine" / "manifest.json").write_text("[]"),
            forge(r, "protected.manifest", {"sha256": hashlib.sha256(b"[]").hexdigest()}),
        ),
        "not a manifest",
    ),
    "an event log that links out": (
        lambda r: ((r / "logs" / "events.jsonl").unlink(), (r / "logs" / "events.jsonl").symlink_to(_host(r))),
        "symbolic link",
    ),
    "a markdown log that is a FIFO": (lambda r: os.mkfifo(r / "logs" / "forged.md"), "not a regular file"),
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_a_hostile_run_folder_is_reported_not_raised(clean_run: Path, tmp_path: Path, case: str) -> None:
    copy = tmp_path / "run"
    shutil.copytree(clean_run, copy, symlinks=True)
    _host(copy).write_text(json.dumps({"seq": 1, "hash": "TOPSECRET"}))
    mutate, says = MUTATIONS[case]
    mutate(copy)
    report = verify_run(copy)
    shown = "\n".join(map(str, report.problems))
    assert says in shown and "TOPSECRET" not in shown
    if case != "a step folder that is not a number":  # an unknown folder is not tampering
        assert not report.clean


def test_the_command_prints_hostile_names_on_one_escaped_line(clean_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(clean_run, copy, symlinks=True)
    name = "x\nclean: 99 events, 0 log appends, 0 protected files intact\x1b]0;t\x07[/red]"
    forge(copy, "protected.tampered", {"files": [name], "found": name})
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "verify", str(copy)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert not any(line.startswith("clean") for line in done.stdout.splitlines())
    assert "\x1b" not in done.stdout
