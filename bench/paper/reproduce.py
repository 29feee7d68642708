"""Run a submission's `reproduce.sh` in a fresh copy, inside the sandbox, with a time limit.

Like PaperBench, the run happens on a copy, so the submission itself is never changed
by its own script, and the judge can tell which files the script produced: every file
whose content or modification time differs from the copy taken before the run.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, field_serializer

from aiscientist.sandbox import LocalSandbox, Sandbox, SandboxUnavailable, get_sandbox
from aiscientist.util import untrusted
from aiscientist.util.text import escape_surrogates

SCRIPT = "reproduce.sh"
LOG = "reproduce.log"
# Written by the grader into a submission folder; never part of what is reproduced.
GRADE_FILE = "grade.json"
COPY_DIR = "submission"  # the copy reproduce.sh runs in (PaperBench's name; not a run folder's area)
LOG_COPY = "grade_reproduce.log"
GRADER_FILES = (GRADE_FILE, LOG_COPY)
_SKIP_DIRS = {".git", "__pycache__"}


class Reproduction(BaseModel):
    """What one reproduction run did. Paths are relative to the copy's root."""

    copy_dir: Path = Field(exclude=True)  # a temporary folder; gone once grading ends
    ran: bool
    error: str | None = None
    started_at: str | None = None
    duration_s: float = 0.0
    timed_out: bool = False
    returncode: int | None = None
    timeout_s: float
    backend: str | None = None
    created: list[str] = []
    changed: list[str] = []

    @field_serializer("created", "changed")
    def _escaped(self, names: list[str]) -> list[str]:
        """Names are kept as the walker gives them (undecodable bytes as surrogates, so the
        files can be opened) and stored escaped, as the event log writes them."""
        return [escape_surrogates(name) for name in names]

    @property
    def produced(self) -> set[str]:
        return set(self.created) | set(self.changed)

    @property
    def log_path(self) -> Path:
        return self.copy_dir / LOG

    @property
    def problem(self) -> str | None:
        """Why there are no reproduction results to judge (None when reproduce.sh ran to its end)."""
        if not self.ran:
            return f"no reproduction ran: {self.error}"
        if self.timed_out:
            return f"the reproduction timed out after {self.timeout_s:g}s"
        return None


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """(mtime_ns, size, sha256) of every file under `root`, by relative path; walked
    without following links, within the walker's limits (`aiscientist.util.untrusted`)."""
    files: dict[str, tuple[int, int, str]] = {}
    walker = untrusted.TreeWalk(root, enter=lambda rel: rel.rsplit("/", 1)[-1] not in _SKIP_DIRS)
    for node, parent in walker:
        if node.kind != "file":
            continue
        try:
            files[node.rel] = (round(node.mtime * 1e9), node.size, walker.digest(parent, node))
        except untrusted.Unreadable:
            continue
    return dict(sorted(files.items()))


def copy_submission(submission: Path, dest: Path) -> Path:
    """A fresh copy of the submission at `dest` (which must not exist), without the grader's own files.
    The submission is untrusted: it is walked without following links (a link is copied as a link),
    within the walker's limits; FIFOs, devices and files with several hard links are left out."""
    dest.mkdir(parents=True)
    walker, budget = untrusted.TreeWalk(submission), untrusted.LIMITS.bytes
    for node, parent in walker:
        parts = node.rel.split("/")
        if node.rel in GRADER_FILES or node.kind == "other":
            continue
        try:
            with untrusted.folder(dest, parts[:-1]) as into:
                if node.kind == "dir":
                    os.mkdir(parts[-1], 0o755, dir_fd=into)
                elif node.kind == "link":
                    os.symlink(node.target, parts[-1], dir_fd=into)
                else:
                    budget -= _copy_file(parent, parts[-1], into, budget)
        except (OSError, untrusted.Unreadable):
            continue  # below a folder that was not copied, or not a plain file
    return dest


def _copy_file(source_dir: int, name: str, into: int, budget: int) -> int:
    """Copy one plain, singly linked file between two open folders (mode kept); returns its size."""
    source = untrusted.open_at(source_dir, name)
    try:
        info = os.fstat(source)
        if info.st_size > budget:
            raise untrusted.Odd("over the copy's byte limit")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        target = os.open(name, flags, info.st_mode & 0o777, dir_fd=into)
        try:
            done = 0
            while done < info.st_size and (sent := os.sendfile(target, source, done, info.st_size - done)):
                done += sent
        finally:
            os.close(target)
    finally:
        os.close(source)
    return info.st_size


def _append_note(copy_dir: Path, note: str) -> None:
    """Append to the copy's log, which the script may have replaced by a link, FIFO or
    hard link to a host file: such a log is left as it is and gets no note."""
    try:
        with untrusted.file(copy_dir, [LOG], write=True) as fd:
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, note.encode())
    except (OSError, untrusted.Unreadable):
        return


def isolated(choice: Sandbox | str = "auto") -> Sandbox:
    """The sandbox a submission's code runs in. Unlike experiments, `auto` never falls back
    to the host: only a sandbox chosen by name as `local` runs it without isolation."""
    if not isinstance(choice, str):
        return choice  # a ready backend, chosen by the caller
    sandbox = get_sandbox(choice)
    if choice != "local" and isinstance(sandbox, LocalSandbox):
        raise SandboxUnavailable(
            f"no isolating sandbox for {SCRIPT} (bubblewrap is missing or cannot create namespaces here): it would "
            "run on the host with your permissions. Use --sandbox docker, or --sandbox local to run it without "
            "isolation on purpose"
        )
    return sandbox


def reproduce(submission: Path, work_dir: Path, timeout_s: float, sandbox: Sandbox | str | None = None) -> Reproduction:
    """Copy `submission` to `work_dir/submission` and run `bash reproduce.sh` there (in
    `isolated(sandbox)`), its output going to `reproduce.log` in the copy."""
    submission = Path(submission)
    copy_dir = copy_submission(submission, Path(work_dir) / COPY_DIR)
    if not (copy_dir / SCRIPT).is_file():
        return Reproduction(
            copy_dir=copy_dir, ran=False, error=f"the submission has no {SCRIPT} at its root", timeout_s=timeout_s
        )
    before = snapshot(copy_dir)
    started = datetime.now(UTC)
    try:
        sandbox = isolated(sandbox or "auto")
        # as PaperBench runs it; with the docker backend, in a new container from the run image
        result = sandbox.run(
            [f"set -o pipefail; bash {SCRIPT} 2>&1 | tee {LOG}"], cwd=copy_dir, timeout=timeout_s, writable=[copy_dir]
        )
    except (OSError, SandboxUnavailable) as err:
        return Reproduction(copy_dir=copy_dir, ran=False, error=f"{SCRIPT} failed to start: {err}", timeout_s=timeout_s)
    after = snapshot(copy_dir)
    if result.timed_out:
        _append_note(copy_dir, f"\n[grader] reproduce.sh timed out after {timeout_s:g}s\n")
    created = sorted(p for p in after if p not in before and p != LOG)
    changed = sorted(p for p in after if p in before and p != LOG and after[p] != before[p])
    return Reproduction(
        copy_dir=copy_dir,
        ran=True,
        error=result.failure(),
        started_at=started.isoformat(timespec="seconds"),
        duration_s=round(result.duration_s, 3),
        timed_out=result.timed_out,
        returncode=result.returncodes[0] if result.returncodes else None,
        timeout_s=timeout_s,
        backend=result.backend,
        created=created,
        changed=changed,
    )
