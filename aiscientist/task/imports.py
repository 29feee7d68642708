"""Which files of a repository a Python entry point reaches, and what its modules import
that the repository does not hold. Read with `ast` only: nothing is imported or run.

An import resolves locally when a file for it exists below one of the search roots (the
importing file's own folder and the task's working folder, as `sys.path[0]` is for a
script and for `python -m`); relative imports resolve from the importing file's package.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_SOURCE = 4 << 20  # bytes of one module read to find its imports

Exists = Callable[[str], bool]


@dataclass(frozen=True)
class Import:
    """One imported name: `from {module} import {name}` with `level` dots, or `import {module}`."""

    module: str
    level: int = 0
    name: str = ""
    guarded: bool = False  # under `try: ... except ImportError` or `if TYPE_CHECKING:` (optional)
    line: int = 0

    @property
    def top(self) -> str:
        return self.module.split(".")[0]


def imports_of(source: str) -> list[Import]:
    """The imports of a module's text (an unparsable text has none: the run reports it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[Import] = []
    _collect(tree.body, False, found)
    return found


def _collect(body: list[ast.stmt], guarded: bool, found: list[Import]) -> None:
    for node in body:
        if isinstance(node, ast.Import):
            found += [Import(a.name, guarded=guarded, line=node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module, level = node.module or "", node.level
            if module != "__future__":
                found += [Import(module, level, a.name, guarded, node.lineno) for a in node.names]
        elif isinstance(node, ast.Try):
            optional = guarded or any(_catches_import_error(h) for h in node.handlers)
            _collect(node.body, optional, found)
            for part in (*[h.body for h in node.handlers], node.orelse, node.finalbody):
                _collect(part, guarded, found)
        elif isinstance(node, ast.If):
            optional = guarded or "TYPE_CHECKING" in ast.unparse(node.test)
            _collect(node.body, optional, found)
            _collect(node.orelse, guarded, found)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For, ast.While)):
            _collect(node.body, guarded, found)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _candidates(dotted: str) -> list[str]:
    path = dotted.replace(".", "/")
    return [f"{path}.py", f"{path}/__init__.py"]


def resolve(imp: Import, importer: str, roots: list[str], exists: Exists) -> list[str] | None:
    """The repository files (relative paths) that `imp`, made in file `importer`, loads;
    None when no root holds it (an installed module, a missing one, a broken relative import)."""
    folder = PurePosixPath(importer).parent
    if imp.level:
        for _ in range(imp.level - 1):
            folder = folder.parent
        return _files(folder.as_posix(), imp, exists)
    for base in dict.fromkeys([folder.as_posix(), *roots]):
        files = _files(base, imp, exists)
        if files is not None:
            return files
    return None


def _files(base: str, imp: Import, exists: Exists) -> list[str] | None:
    prefix = "" if base in ("", ".") else base.strip("/") + "/"
    here = lambda dotted: [prefix + c for c in _candidates(dotted) if exists(prefix + c)]  # noqa: E731
    parts = imp.module.split(".") if imp.module else []
    if parts and not here(imp.module):
        return None
    files = [f for i in range(1, len(parts) + 1) for f in here(".".join(parts[:i]))]
    if not parts:
        files += [prefix + "__init__.py"] if exists(prefix + "__init__.py") else []
    if imp.name and imp.name != "*":
        files += here(".".join(p for p in (imp.module, imp.name) if p))
    return sorted(set(files)) or None


def read_source(path: Path) -> str:
    """A module's text for import scanning (bounded; undecodable bytes replaced)."""
    try:
        with path.open("rb") as fh:
            return fh.read(MAX_SOURCE).decode("utf-8", errors="replace")
    except OSError:
        return ""


def reached(repo: Path, entries: list[str], roots: list[str]) -> list[str]:
    """Every Python file of `repo` the `entries` (relative paths) load, entries included."""
    exists: Exists = lambda rel: (repo / rel).is_file()  # noqa: E731
    seen: list[str] = []
    queue = [e for e in entries if exists(e)]
    while queue:
        rel = queue.pop(0)
        if rel in seen:
            continue
        seen.append(rel)
        for imp in imports_of(read_source(repo / rel)):
            queue += [f for f in resolve(imp, rel, roots, exists) or [] if f not in seen]
    return sorted(seen)


def installed_needed(imports: list[Import]) -> set[str]:
    """Top-level names that must come from the Python environment (not the standard library)."""
    return {i.top for i in imports if not i.level and i.top and i.top not in sys.stdlib_module_names}
