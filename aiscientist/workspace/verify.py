"""Check a run folder: the event chain, the markdown logs against it, and the
protected files against their pristine hashes. Reads files only (no Workspace),
so it also works on a damaged folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel

from aiscientist.records.paths import EVENTS_HEAD, EVENTS_LOG, STEP_RECORD
from aiscientist.records.step import folder_hashes
from aiscientist.workspace.eventlog import FIELDS, GENESIS, event_hash, line_hashes


class Problem(BaseModel):
    file: str
    line: int | None = None
    message: str

    def __str__(self) -> str:
        return f"{self.file}" + (f" line {self.line}" if self.line is not None else "") + f": {self.message}"


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
    what = ", ".join(p.get("files") or [p.get("file", "?")])
    extra = p.get("problem") or (f"step {p['step']}" if p.get("step") else "")
    return (
        f"seq {event['seq']} {event['kind']}: {what} (found: {p.get('found', '?')}"
        + (f", {extra}" if extra else "")
        + (f", restored: {p['restored']}" if "restored" in p else "")
        + ")"
    )


def _check_chain(root: Path, report: Report) -> list[dict]:
    """The events up to the first bad line; the first problem is reported."""
    path = root / EVENTS_LOG
    if not path.is_file():
        report.problems.append(Problem(file=EVENTS_LOG, message="missing"))
        return []
    events: list[dict] = []
    prev = GENESIS
    *raw_lines, last = path.read_bytes().split(b"\n")
    if last:
        message = "incomplete last line (file truncated or written outside the API)"
        report.problems.append(Problem(file=EVENTS_LOG, line=len(raw_lines) + 1, message=message))
    for number, raw in enumerate(raw_lines, 1):
        problem = _bad_event(raw, number, prev)
        if problem:
            report.problems.insert(0, Problem(file=EVENTS_LOG, line=number, message=problem))
            break
        events.append(json.loads(raw))
        prev = events[-1]["hash"]
    report.events = len(events)
    if not any(p.file == EVENTS_LOG for p in report.problems):
        _check_head(root, events, report)
    return events


def _bad_event(raw: bytes, number: int, prev: str) -> str | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return "not valid JSON (edited or truncated)"
    if not isinstance(event, dict) or any(k not in event for k in (*FIELDS, "hash")):
        return "not an event (fields missing)"
    if event_hash(event) != event["hash"]:
        return f"hash does not match the line's content (seq {event['seq']} edited)"
    if event["seq"] != number:
        return f"seq {event['seq']} where {number} was expected (a line was deleted, inserted or reordered)"
    if event["prev_hash"] != prev:
        return "prev_hash does not match the previous line's hash (a line was deleted, inserted or reordered)"
    return None


def _check_head(root: Path, events: list[dict], report: Report) -> None:
    try:
        head = json.loads((root / EVENTS_HEAD).read_text())
    except (OSError, ValueError):
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
    for rel in sorted(set(expected) | {p.relative_to(root).as_posix() for p in (root / "logs").glob("*.md")}):
        path = root / rel
        if not path.is_file():
            report.problems.append(Problem(file=rel, message="missing"))
            continue
        lines = line_hashes(path.read_bytes())
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
    manifest_path = root / ".pristine" / "manifest.json"
    recorded = [e["payload"] for e in events if e["kind"] == "protected.manifest"]
    if not manifest_path.is_file():
        if recorded:
            report.problems.append(Problem(file=".pristine/manifest.json", message="missing"))
        return
    data = manifest_path.read_bytes()
    if recorded and hashlib.sha256(data).hexdigest() != recorded[-1]["sha256"]:
        report.problems.append(
            Problem(file=".pristine/manifest.json", message="differs from the manifest recorded in the event chain")
        )
        return
    manifest: dict[str, str] = json.loads(data)
    report.protected_files = len(manifest)
    for rel, digest in sorted(manifest.items()):
        for where in (root / "submission" / rel, root / ".pristine" / "files" / rel):
            shown = where.relative_to(root).as_posix()
            if where.is_symlink() or not where.is_file():
                report.problems.append(
                    Problem(file=shown, message="protected file missing or replaced by a link/folder")
                )
            elif hashlib.sha256(where.read_bytes()).hexdigest() != digest:
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
    on_disk = {int(p.name.removeprefix("step_")): p for p in (root / "experiments").glob("step_[0-9]*") if p.is_dir()}
    for step, event in sorted(recorded.items()):
        folder = on_disk.get(step)
        shown = f"experiments/step_{step:04d}"
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
            if (on_disk[step] / STEP_RECORD).is_file():
                report.problems.append(
                    Problem(file=f"experiments/step_{step:04d}", message="a step folder with no end event in the chain")
                )
