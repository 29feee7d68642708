"""Check a run folder: the event chain, the markdown logs against it, and the
protected files against their pristine hashes. Reads files only (no Workspace),
so it also works on a damaged folder.

The folder may be hostile (tampered, or handed over by someone else): every file is
read with the bounded no-follow reader (`aiscientist.util.untrusted`), JSON is parsed
with a depth limit, every event is checked for the fields and types verify uses
before it is used, and paths named inside the folder must stay inside it. What cannot
be read or does not fit is a Problem in the report, never an exception."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, TypeAdapter, ValidationError

from aiscientist.records.paths import (
    EVENTS_HEAD,
    EVENTS_LOG,
    EXPERIMENTS,
    LOGS,
    PRISTINE_FILES,
    PRISTINE_MANIFEST,
    STEP_PATTERN,
    STEP_RECORD,
    in_submission,
    step_dir_name,
)
from aiscientist.records.step import folder_hashes
from aiscientist.util import untrusted
from aiscientist.util.text import clean, name
from aiscientist.workspace.eventlog import FIELDS, GENESIS, event_hash, line_hashes

EVENTS_BYTES = 1 << 30
FILE_BYTES = 256 << 20  # a markdown log, a manifest or a protected file
_STEP_DIR = re.compile(STEP_PATTERN)


class Problem(BaseModel):
    file: str
    line: int | None = None
    message: str

    def __str__(self) -> str:
        """One line, escaped: file names and messages may come from the folder itself."""
        where = name(self.file) + (f" line {self.line}" if self.line is not None else "")
        return f"{where}: {clean(self.message)}"


class _Event(BaseModel):
    seq: StrictInt
    ts: StrictStr
    role: StrictStr
    kind: StrictStr
    payload: dict[str, Any]
    prev_hash: StrictStr
    hash: StrictStr


class _Payload(BaseModel):
    model_config = ConfigDict(extra="allow")


class _LogAppend(_Payload):
    file: StrictStr
    offset: StrictInt
    length: StrictInt
    lines: list[StrictStr]


class _Manifest(_Payload):
    sha256: StrictStr


class _StepEnd(_Payload):
    step: StrictInt
    files: dict[str, StrictStr] | None = None


class _StepInvalidated(_Payload):
    step: StrictInt
    record_sha256: StrictStr | None = None


# the payload fields verify uses, by event kind: a chain event without them is a problem
PAYLOADS: dict[str, type[_Payload]] = {
    "log.append": _LogAppend,
    "protected.manifest": _Manifest,
    "experiment.end": _StepEnd,
    "step.invalidated": _StepInvalidated,
}
_MANIFEST = TypeAdapter(dict[str, str])


def _read(root: Path, rel: str, limit: int = FILE_BYTES) -> bytes:
    """`root/rel`, read without following a link, a regular file of at most `limit` bytes."""
    return untrusted.read_file(root, rel, limit, hard_links=True)


def _json(root: Path, rel: str) -> Any:
    """JSON file `root/rel` (Unreadable or ValueError when it cannot be read or parsed)."""
    return untrusted.loads_json(_read(root, rel))


class Report(BaseModel):
    events: int = 0
    log_appends: int = 0
    protected_files: int = 0
    tamper_events: list[str] = []
    problems: list[Problem] = []

    @property
    def clean(self) -> bool:
        return not self.problems


def verify_run(root: Path | str) -> Report:
    root = Path(root)
    report = Report()
    events = _check_chain(root, report)
    _check_markdown_logs(root, events, report)
    _check_protected(root, events, report)
    _check_steps(root, events, report)
    report.tamper_events = [_describe(e) for e in events if e["kind"] in TAMPER_KINDS]
    return report


TAMPER_KINDS = ("protected.tampered", "pristine.tampered", "log.tampered", "step.invalidated", "integrity.violation")


def _describe(event: dict) -> str:
    p = event["payload"]
    files = p.get("files")
    what = ", ".join(map(str, files)) if isinstance(files, list) and files else str(p.get("file", "?"))
    extra = p.get("problem") or (f"step {p['step']}" if p.get("step") else "")
    text = (
        f"seq {event['seq']} {event['kind']}: {what} (found: {p.get('found', '?')}"
        + (f", {extra}" if extra else "")
        + (f", restored: {p['restored']}" if "restored" in p else "")
        + ")"
    )
    return clean(text, 2000)


def _check_chain(root: Path, report: Report) -> list[dict]:
    """The events up to the first bad line; the first problem is reported."""
    try:
        data = _read(root, EVENTS_LOG, EVENTS_BYTES)
    except untrusted.Unreadable as err:
        report.problems.append(Problem(file=EVENTS_LOG, message=err.reason))
        return []
    events: list[dict] = []
    prev = GENESIS
    *raw_lines, last = data.split(b"\n")
    if last:
        message = "incomplete last line (file truncated or written outside the API)"
        report.problems.append(Problem(file=EVENTS_LOG, line=len(raw_lines) + 1, message=message))
    for number, raw in enumerate(raw_lines, 1):
        problem = _bad_event(raw, number, prev)
        if problem:
            report.problems.insert(0, Problem(file=EVENTS_LOG, line=number, message=problem))
            break
        events.append(untrusted.loads_json(raw))
        prev = events[-1]["hash"]
    report.events = len(events)
    if not any(p.file == EVENTS_LOG for p in report.problems):
        _check_head(root, events, report)
    return events


def _bad_event(raw: bytes, number: int, prev: str) -> str | None:
    try:
        event = untrusted.loads_json(raw)
    except ValueError:
        return "not valid JSON (edited, truncated or nested too deep)"
    if not isinstance(event, dict) or any(k not in event for k in (*FIELDS, "hash")):
        return "not an event (fields missing)"
    try:
        _Event.model_validate(event)
        if event["kind"] in PAYLOADS:
            PAYLOADS[event["kind"]].model_validate(event["payload"])
    except ValidationError as err:
        first = err.errors()[0]
        return f"not an event verify can read ({'.'.join(map(str, first['loc']))}: {first['msg']})"
    if event_hash(event) != event["hash"]:
        return f"hash does not match the line's content (seq {event['seq']} edited)"
    if event["seq"] != number:
        return f"seq {event['seq']} where {number} was expected (a line was deleted, inserted or reordered)"
    if event["prev_hash"] != prev:
        return "prev_hash does not match the previous line's hash (a line was deleted, inserted or reordered)"
    return None


def _check_head(root: Path, events: list[dict], report: Report) -> None:
    try:
        head = _json(root, EVENTS_HEAD)
        if not isinstance(head, dict) or not isinstance(head.get("seq", 0), int):
            raise ValueError("not a chain head")
    except (untrusted.Unreadable, ValueError):
        if events:
            report.problems.append(Problem(file=EVENTS_HEAD, message="chain head missing or unreadable"))
        return
    last_seq = events[-1]["seq"] if events else 0
    if head.get("seq", 0) > last_seq:
        report.problems.append(
            Problem(
                file=EVENTS_LOG,
                line=last_seq + 1,
                message=f"missing: the chain head records seq {head['seq']} but the log ends at seq {last_seq} "
                "(truncated)",
            )
        )
    elif head.get("seq", 0) < last_seq or (events and head.get("hash") != events[-1]["hash"]):
        report.problems.append(
            Problem(
                file=EVENTS_LOG,
                line=head.get("seq", 0) + 1,
                message="lines after the recorded chain head (appended outside the API)",
            )
        )


def _check_markdown_logs(root: Path, events: list[dict], report: Report) -> None:
    expected: dict[str, list[tuple[str, int]]] = {}
    ends: dict[str, int] = {}
    for event in events:
        if event["kind"] != "log.append":
            continue
        payload = event["payload"]
        rel = payload["file"]
        if payload["offset"] != ends.get(rel, 0):
            report.problems.append(
                Problem(
                    file=EVENTS_LOG,
                    line=event["seq"],
                    message=f"append to {rel} does not continue where the previous one ended",
                )
            )
            return
        ends[rel] = payload["offset"] + payload["length"]
        expected.setdefault(rel, []).extend((h, event["seq"]) for h in payload["lines"])
        report.log_appends += 1
    on_disk = {f"{LOGS}/{n.rel}" for n in untrusted.walk(root / LOGS, untrusted.Limits(depth=0)).nodes}
    for rel in sorted(set(expected) | {r for r in on_disk if r.endswith(".md")}):
        try:
            lines = line_hashes(_read(root, rel))
        except untrusted.Unreadable as err:
            report.problems.append(Problem(file=rel, message=err.reason))
            continue
        want = expected.get(rel, [])
        for number, (digest, seq) in enumerate(want, 1):
            if number > len(lines):
                report.problems.append(
                    Problem(
                        file=rel, line=number, message=f"missing (log truncated; the line was appended at seq {seq})"
                    )
                )
                break
            if lines[number - 1] != digest:
                report.problems.append(
                    Problem(
                        file=rel,
                        line=number,
                        message=f"does not match the text appended at seq {seq} (edited, deleted or reordered)",
                    )
                )
                break
        else:
            if len(lines) > len(want):
                report.problems.append(
                    Problem(
                        file=rel,
                        line=len(want) + 1,
                        message="text not recorded in the event chain (written outside the API)",
                    )
                )


def _check_protected(root: Path, events: list[dict], report: Report) -> None:
    manifest_rel = PRISTINE_MANIFEST
    recorded = [e["payload"] for e in events if e["kind"] == "protected.manifest"]
    try:
        data = _read(root, manifest_rel)
    except untrusted.Unreadable as err:
        if recorded or err.reason != "missing":
            report.problems.append(Problem(file=manifest_rel, message=err.reason))
        return
    if recorded and hashlib.sha256(data).hexdigest() != recorded[-1]["sha256"]:
        report.problems.append(
            Problem(file=manifest_rel, message="differs from the manifest recorded in the event chain")
        )
        return
    try:
        manifest = _MANIFEST.validate_python(untrusted.loads_json(data))
    except (ValueError, ValidationError):
        report.problems.append(Problem(file=manifest_rel, message="not a manifest (a JSON object of path: sha256)"))
        return
    report.protected_files = len(manifest)
    for rel, digest in sorted(manifest.items()):
        for shown in (in_submission(rel), f"{PRISTINE_FILES}/{rel}"):
            try:
                found = hashlib.sha256(_read(root, shown)).hexdigest()
            except untrusted.Unreadable as err:
                message = f"protected file missing or replaced by a link/folder ({err.reason})"
                report.problems.append(Problem(file=shown, message=message))
                continue
            if found != digest:
                report.problems.append(Problem(file=shown, message="differs from its pristine hash"))


def _check_steps(root: Path, events: list[dict], report: Report) -> None:
    """Every step folder against the file hashes in its `experiment.end` event:
    a file edited, added or deleted, or a whole folder missing, is a problem.
    The watcher's later invalidation of a record carries the record's new hash.
    (Steps recorded before end events carried hashes are not checked.)"""
    recorded = {e["payload"]["step"]: e for e in events if e["kind"] == "experiment.end" and "files" in e["payload"]}
    rewritten = {
        e["payload"]["step"]: {STEP_RECORD: e["payload"]["record_sha256"]}
        for e in events
        if e["kind"] == "step.invalidated" and "record_sha256" in e["payload"]
    }
    on_disk = _step_folders(root)
    for step, event in sorted(recorded.items()):
        folder = on_disk.get(step)
        shown = step_dir_name(step)
        if folder is None:
            report.problems.append(Problem(file=shown, message=f"step folder missing (recorded at seq {event['seq']})"))
            continue
        want: dict[str, str] = {**event["payload"]["files"], **rewritten.get(step, {})}
        have = folder_hashes(folder)
        for rel in sorted(set(want) | set(have)):
            if rel not in have:
                report.problems.append(Problem(file=f"{shown}/{rel}", message="deleted after the step was recorded"))
            elif rel not in want:
                report.problems.append(Problem(file=f"{shown}/{rel}", message="added after the step was recorded"))
            elif have[rel] != want[rel]:
                report.problems.append(
                    Problem(file=f"{shown}/{rel}", message=f"edited after the step was recorded (seq {event['seq']})")
                )
    if recorded:
        for step in sorted(set(on_disk) - set(recorded)):
            if os.path.lexists(on_disk[step] / STEP_RECORD):
                report.problems.append(
                    Problem(file=step_dir_name(step), message="a step folder with no end event in the chain")
                )


def _step_folders(root: Path) -> dict[int, Path]:
    """experiments/step_N folders by N: real folders only (a link there is not followed)."""
    found = {}
    for node in untrusted.walk(root / EXPERIMENTS, untrusted.Limits(depth=0)).nodes:
        match = _STEP_DIR.fullmatch(node.rel)
        if match and node.kind == "dir":
            found[int(match.group(1))] = root / EXPERIMENTS / node.rel
    return found
