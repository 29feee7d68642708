"""Check at the point of use: no protected command runs on a tree untrusted code changed unchecked.

A step's (or the hidden test's) commands share one writable tree, and later ones (an
evaluator, FML-bench's postprocess) are the task's. So the commands run one sandbox
invocation each, and after every one but the last the tree is rescanned and checked as a
finished step is (protected files against their pristine hashes, `integrity.violations`
against what the step may leave): the next command runs only on a tree that passed, with
every process of the one before dead. A tree that fails stops the list; the caller's own
final check then records why. The protected files bound read-only into the next command are
the ones just verified, byte for byte their pristine copies (`ExperimentEngine.run_commands`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from aiscientist.experiment import integrity
from aiscientist.sandbox import CommandsResult
from aiscientist.task import Task


class Runner(Protocol):
    task: Task

    def run_commands(
        self,
        commands: list[str],
        repo: Path | None = None,
        hide_task: bool = True,
        protect: bool = True,
        timeout: float | None = None,
    ) -> CommandsResult: ...

    def protected_manifest(self) -> dict[str, str]: ...


def problem(runner: Runner, repo: Path, allowed: dict[str, integrity.Entry], test: bool = False) -> str | None:
    """Why the tree at `repo` may not be used by the next command, or None."""
    for rel, digest in runner.protected_manifest().items():
        if integrity.file_digest(repo, rel) != digest:
            return f"tampering: protected file {rel} changed"
    metrics_rel = runner.task.metrics_path(repo, test).relative_to(repo).as_posix()
    broken = integrity.violations(runner.task, repo, allowed, integrity.scan(repo), metrics_rel)
    return broken[0] if broken else None


def run_checked(
    runner: Runner,
    repo: Path,
    allowed: dict[str, integrity.Entry],
    lists: list[tuple[list[str], float | None]],
    test: bool = False,
    after: Callable[[], str | None] | None = None,
) -> CommandsResult:
    """Run each (commands, timeout) list in order, one invocation per command, checking the
    tree before every command that follows one; stop at a failed command or a tree that fails
    its check. The last list is the task's own postprocess: it is checked before it starts, not
    between its own commands (FML-bench's legacy postprocess copies its script in, runs it and
    removes it). `after` runs after every invocation (the hidden test's disk quota): a reason stops the list."""
    last = len(lists) - 1
    flat = [
        (command, timeout, i == last and j > 0)
        for i, (cmds, timeout) in enumerate(lists)
        for j, command in enumerate(cmds)
    ]
    result: CommandsResult | None = None
    for index, (command, timeout, _) in enumerate(flat):
        done = runner.run_commands([command], repo, timeout=timeout)
        result = done if result is None else result.then(done)
        if not done.ok or (after is not None and after() is not None):
            break
        follows = index < len(flat) - 1 and not flat[index + 1][2]
        if follows and problem(runner, repo, allowed, test) is not None:
            break
    assert result is not None, "a task has at least one command"
    return result
