"""`bash`: the shell tool, run in `submission/` through the experiments' sandbox backend.

What a command may touch is set by the sandbox's mounts, not by the prompt: writable are
the role's writable areas; protected files are read-only; the task's own folders and
`.pristine/` are hidden; no network. Each call is a `shell.run` event naming the editable
files it changed (by content digest), which become the call's artifacts. After each call the
run folder's writable areas are held to the run-wide disk quota (experiment/quota.py): over it,
the excess is removed and the call fails with "disk quota" (a `quota.exceeded` event).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from aiscientist.agent.tools import Tool, Toolbox, clip
from aiscientist.experiment import quota
from aiscientist.experiment.integrity import READ_LIMIT
from aiscientist.records.causes import FailureCause
from aiscientist.records.paths import SUBMISSION, in_submission
from aiscientist.sandbox import CommandsResult
from aiscientist.sandbox.base import TAIL_CHARS
from aiscientist.task import expand_globs
from aiscientist.util import untrusted
from aiscientist.util.text import quoted_block

TIMEOUT_S = 600.0
OUTPUT_CHARS = 6000
CUT_OUTPUT = (
    "only the output's end is shown: to see all of it, send it to a file (COMMAND > out.txt 2>&1) and page "
    "through that with read_file"
)


class BashArgs(BaseModel):
    command: str = Field(description="the command")


def writable_areas(ws: Any, role: str) -> list[Path]:
    names = {glob.split("/", 1)[0] for glob in ws.scope(role).policy.write_globs}
    return [ws.paths.root / name for name in sorted(names) if (ws.paths.root / name).is_dir()]


def baseline_entries(ws: Any) -> list[str]:
    """The submission's files and folders as setup left it (none before setup)."""
    return [*ws.engine.baseline_tree(), *(ws.engine.baseline_folders() or [])]


def editable_digests(ws: Any) -> dict[str, str]:
    """'' for a link or special file."""
    submission = ws.paths.submission
    digests = {}
    for rel in expand_globs(submission, ws.task.editable_globs):
        try:
            digests[rel] = hashlib.sha256(untrusted.read_file(submission, rel, READ_LIMIT, hard_links=True)).hexdigest()
        except untrusted.Unreadable:
            digests[rel] = ""
    return digests


def run_shell(ws: Any, role: str, command: str, on_change: Callable[[str], None] | None = None) -> str:
    """`[exit N]` or `[timed out]`, then the output's tail; a tail that is not the whole output says
    how to see the rest."""
    result = sandboxed_shell(ws, role, command, on_change)
    code = result.returncodes[-1] if result.returncodes else None
    out = (result.stdout_tail + ("\n[stderr]\n" + result.stderr_tail if result.stderr_tail.strip() else "")).strip()
    status = "timed out" if result.timed_out else f"exit {code if code is not None else '?'}"
    cut = len(out) > OUTPUT_CHARS or max(len(result.stdout_tail), len(result.stderr_tail)) >= TAIL_CHARS
    more = f"\n[{CUT_OUTPUT}]" if cut else ""
    return f"[{status}]\n{quoted_block(out[-OUTPUT_CHARS:], 'command output')}{more}" if out else f"[{status}]"


def sandboxed_shell(ws: Any, role: str, command: str, on_change: Callable[[str], None] | None = None) -> CommandsResult:
    """Run `command` in `submission/` with `role`'s writable areas; record it as a `shell.run` event."""
    task, submission = ws.task, ws.paths.submission
    before = editable_digests(ws)
    writable = writable_areas(ws, role)
    readonly = [submission / rel for rel in ws.engine.protected_manifest()]
    if submission not in writable:
        readonly.append(submission)  # the working directory stays visible
    result = ws.engine.sandbox.run(
        [command],
        cwd=submission,
        timeout=min(task.command_timeout_s, TIMEOUT_S),
        env=ws.engine.env,
        writable=writable,
        readonly=readonly,
        hidden=[*task.agent_hidden_paths(), ws.paths.pristine],
    )
    over, removed = quota.enforce_areas(task.sandbox, quota.run_folder_areas(task, ws.paths, baseline_entries(ws)))
    if over:
        ws.events.record(role, "quota.exceeded", {"problem": over, "removed": removed[:50]})
        note = f"\n[{FailureCause.DISK_QUOTA.value}] {over}; removed: {', '.join(removed[:10])}"
        result = result.model_copy(
            update={"stderr_tail": result.stderr_tail + note, "returncodes": [*result.returncodes[:-1], 1]}
        )
    code = result.returncodes[-1] if result.returncodes else None
    after = editable_digests(ws)
    changed = [in_submission(rel) for rel in sorted(before.keys() | after.keys()) if before.get(rel) != after.get(rel)]
    payload = {
        "command": clip(command, 2000),
        "exit_code": code,
        "timed_out": result.timed_out,
        "duration_s": round(result.duration_s, 3),
        "changed": changed,
    }
    ws.events.record(role, "shell.run", payload)
    for path in changed if on_change else []:
        on_change(path)
    return result


def shell_tool(ws: Any, role: str, box: Toolbox | None = None) -> Tool:
    def bash(args: BashArgs) -> str:
        return run_shell(ws, role, args.command, box.note if box else None)

    return Tool(
        "bash",
        f"Run a bash command in {SUBMISSION}/ (sandboxed: no network; only your writable areas can be changed).",
        BashArgs,
        bash,
        effect=True,
    )
