"""`bash`: the shell tool every agent that has one gets (PaperBench's Basic and Iterative,
AiScientist's implementation specialist, helper and flat agent).

A command runs through the same sandbox backend as experiments (`ws.engine.sandbox`),
in `submission/`, with a time limit per call and its output clipped. What it may touch
is set by the sandbox's mounts, not by the prompt: writable are the role's writable
areas (the first folder of each of its write rules, e.g. submission/ and scratch/);
protected files are mounted read-only; the task's own folders (hidden test assets, the
rubric) and `.pristine/` are hidden; there is no network. Every call is recorded as a
`shell.run` event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from aiscientist.agent.tools import Tool, clip

TIMEOUT_S = 600.0
OUTPUT_CHARS = 6000


class BashArgs(BaseModel):
    command: str = Field(description="the command")


def writable_areas(ws: Any, role: str) -> list[Path]:
    """The top-level folders `role` may write through the file API."""
    names = {glob.split("/", 1)[0] for glob in ws.scope(role).policy.write_globs}
    return [ws.paths.root / name for name in sorted(names) if (ws.paths.root / name).is_dir()]


def run_shell(ws: Any, role: str, command: str) -> str:
    """Run `command` in submission/ inside the sandbox; `[exit N]` or `[timed out]`, then
    the output's tail."""
    task, submission = ws.task, ws.paths.submission
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
    code = result.returncodes[-1] if result.returncodes else None
    ws.events.record(role, "shell.run", {"command": clip(command, 2000), "exit_code": code, "timed_out": result.timed_out, "duration_s": round(result.duration_s, 3)})
    out = (result.stdout_tail + ("\n[stderr]\n" + result.stderr_tail if result.stderr_tail.strip() else "")).strip()
    status = "timed out" if result.timed_out else f"exit {code if code is not None else '?'}"
    return f"[{status}]\n{out[-OUTPUT_CHARS:]}"


def shell_tool(ws: Any, role: str) -> Tool:
    """The `bash` tool for `role` (an effect: a resumed run answers it from the journal)."""

    def bash(args: BashArgs) -> str:
        return run_shell(ws, role, args.command)

    return Tool("bash", "Run a bash command in submission/ (sandboxed: no network; only your writable areas can be changed).", BashArgs, bash, effect=True)

