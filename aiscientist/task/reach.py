"""What a task's score commands and modules reach, checked against what their sandbox
invocation shows (docs/contracts.md, "Scoring"), before any step runs:
- a score, test_score or test_prepare command may name only the scorer files, the
  artifacts and (hidden test only) the hidden files: nothing else is laid out for it;
- a path is protected (in the agents' copy, read-only) or hidden (never copied), not both;
- an editable module's local imports are in the agents' copy (not hidden), a scorer
  module's are scorer files; relative imports resolve. What must come installed is
  `installed_imports`' answer, looked up inside the sandbox by preflight.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from aiscientist.task.imports import Import, imports_of, installed_needed, read_source, resolve
from aiscientist.task.model import Task, TaskError, expand_globs, glob_match
from aiscientist.task.words import SCRIPT_SUFFIXES, python_entry, simple_commands

SCORE_LISTS = ("score", "test_score", "test_prepare")


def check_reach(task: Task, file: Path) -> None:
    _check_protected_hidden(task, file)
    _check_score_commands(task, file)
    for field, rel, imp, target in _local_imports(task):
        if target is None:
            raise TaskError(file, field, f"{rel}: line {imp.line}: {_spelled(imp)} does not resolve to a file")
        raise TaskError(file, field, f"{rel}: line {imp.line}: {_spelled(imp)} loads {target}, {_unseen(field)}")


def _check_protected_hidden(task: Task, file: Path) -> None:
    for protected in task.protected:
        for hidden in task.hidden:
            both = [r for r in expand_globs(task.repository, [protected]) if task.is_hidden(r)]
            if both or glob_match(protected, hidden) or glob_match(hidden, protected):
                what = both[0] if both else protected
                raise TaskError(
                    file,
                    "hidden",
                    f"{what} is both protected ({protected!r}) and hidden ({hidden!r}): a protected file is in the "
                    "agents' copy, read-only, a hidden one never is; keep it in one list",
                )


def _visible(task: Task, field: str) -> list[str]:
    return [*task.scorer, *task.artifacts, *(task.hidden if field != "score" else [])]


def _check_score_commands(task: Task, file: Path) -> None:
    """Every file a score command names must be laid out for the score invocation."""
    cwd = PurePosixPath(task.working_dir)
    for field in SCORE_LISTS:
        visible = _visible(task, field)
        for command in getattr(task, field):
            try:
                commands = list(simple_commands(command))
            except ValueError as err:
                raise TaskError(file, field, f"{command!r}: cannot parse the command: {err}") from None
            for rel in (r for words in commands for r in _files_named(task, cwd, words)):
                if not any(glob_match(rel, pattern) for pattern in visible):
                    sees = "the scorer files and the artifacts" + (", and the hidden files" if field != "score" else "")
                    raise TaskError(
                        file,
                        field,
                        f"{command!r} names {rel}, which its sandbox invocation does not see (it sees only {sees}): "
                        "add it to scorer (and protected)",
                    )


def _files_named(task: Task, cwd: PurePosixPath, words: list[str]) -> list[str]:
    """Repository paths a simple command runs or reads: a program by relative path, the
    python script or module it runs, and arguments naming a file of the repository."""
    named = []
    entry = python_entry(words)
    if entry is not None and entry[0] == "module":
        parts = entry[1].replace(".", "/")
        named += [c for c in (f"{parts}.py", f"{parts}/__init__.py") if (task.repository / cwd / c).is_file()][:1]
        named += [] if named else [f"{parts}.py"]
    candidates = [words[0]] if "/" in words[0] and not words[0].startswith("/") else []
    for arg in words[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if value and not value.startswith(("-", "/")):
            candidates.append(value)
    for value in candidates:
        rel = os.path.normpath(cwd / value)
        if rel.endswith(SCRIPT_SUFFIXES) or (task.repository / rel).is_file():
            named.append(PurePosixPath(rel).as_posix())
    return named


def _spelled(imp: Import) -> str:
    module = "." * imp.level + imp.module
    return f"from {module} import {imp.name}" if imp.name else f"import {module}"


def _unseen(field: str) -> str:
    if field == "scorer":
        return "which is not a scorer file: the score invocation sees only those (add it to scorer and protected)"
    return "which is hidden: the run never sees hidden files"


def _modules(task: Task) -> list[tuple[str, str]]:
    """(field, relative path) of the editable and scorer Python modules."""
    found = [("editable", r) for r in expand_globs(task.repository, task.editable)]
    found += [("scorer", r) for r in expand_globs(task.repository, task.scorer)]
    return [(field, rel) for field, rel in found if rel.endswith(".py")]


def _local_imports(task: Task) -> Iterator[tuple[str, str, Import, str | None]]:
    """The imports of editable and scorer modules that resolve to a file their run does not
    see (target), or that are relative and resolve to nothing (target None)."""
    repo, roots = task.repository, [task.working_dir]
    for field, rel in _modules(task):
        if field == "scorer":
            exists = lambda r: (repo / r).is_file()  # noqa: E731
        else:
            exists = lambda r: (repo / r).is_file() and not task.is_hidden(r)  # noqa: E731
        for imp in imports_of(read_source(repo / rel)):
            local = resolve(imp, rel, roots, lambda r: (repo / r).is_file())
            if local is None:
                if imp.level and not imp.guarded:
                    yield field, rel, imp, None
                continue
            for target in local:
                seen = any(glob_match(target, p) for p in task.scorer) if field == "scorer" else exists(target)
                if not seen and not imp.guarded:
                    yield field, rel, imp, target


def installed_imports(task: Task) -> dict[str, tuple[str, str, Import]]:
    """Top-level modules the editable and scorer modules import unguarded that the
    repository does not hold: {name: (field, file, import)}, for a look-up in the sandbox."""
    repo, roots = task.repository, [task.working_dir]
    needed: dict[str, tuple[str, str, Import]] = {}
    for field, rel in _modules(task):
        for imp in imports_of(read_source(repo / rel)):
            if imp.guarded or resolve(imp, rel, roots, lambda r: (repo / r).is_file()) is not None:
                continue
            for name in installed_needed([imp]):
                needed.setdefault(name, (field, rel, imp))
    return needed
