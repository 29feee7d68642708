"""The code's shape, measured: lines of non-test Python, the largest files, import cycles.

Counts every `.py` file outside `tests/` and `bench/tasks/` (the task repositories are
data), in total and as code only (no blank lines, comments or docstrings), lists the
files over 400 lines and finds cycles among the project's module-level imports (an
import inside a function or under `if TYPE_CHECKING:` is not a cycle at import time).

Goals (issue #12): no import cycles; <= 9,000 lines; no file over 400 lines.

    python perf/structure.py [--json FILE]
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("aiscientist", "bench", "perf", "scripts")
MAX_LINES, MAX_FILE = 9_000, 400


def python_files() -> list[Path]:
    files = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return [p for p in files if not p.relative_to(ROOT).as_posix().startswith("bench/tasks/")]


def code_lines(source: str, tree: ast.Module | None = None) -> int:
    """Lines holding a token other than a comment, a docstring or layout (`tree`:
    `source` already parsed)."""
    tree = tree or ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in layout:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_at_load(tree: ast.Module, modules: set[str]) -> set[str]:
    """The project modules a module imports when it is loaded."""
    found: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            continue
        if not isinstance(statement, (ast.Import, ast.ImportFrom, ast.If, ast.Try)):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found & modules


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                work.append((target, iter(sorted(graph[target]))))
            elif target in stack:
                low[node] = min(low[node], index[target])
    return found


def measure() -> dict:
    files = python_files()
    sources = {p: p.read_text() for p in files}
    trees = {p: ast.parse(text) for p, text in sources.items()}
    names = {module_name(p): p for p in files}
    graph = {name: imports_at_load(trees[path], set(names)) - {name} for name, path in names.items()}
    lines = {p.relative_to(ROOT).as_posix(): len(text.splitlines()) for p, text in sources.items()}
    by_package: Counter[str] = Counter()
    for rel, count in lines.items():
        by_package[rel.split("/")[0]] += count
    return {
        "files": len(files),
        "lines": sum(lines.values()),
        "code_lines": sum(code_lines(text, trees[p]) for p, text in sources.items()),
        "lines_by_package": dict(by_package.most_common()),
        "largest": sorted(lines.items(), key=lambda item: -item[1])[:5],
        "over_limit": [rel for rel, count in lines.items() if count > MAX_FILE],
        "import_cycles": cycles(graph),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures = measure()
    verdict = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    print(
        f"{figures['files']} files, {figures['lines']:,} lines of non-test Python outside bench/tasks/ ({figures['code_lines']:,} of code)"
    )
    print("by folder: " + ", ".join(f"{name} {count:,}" for name, count in figures["lines_by_package"].items()))
    print("largest: " + ", ".join(f"{rel} ({count})" for rel, count in figures["largest"]))
    for cycle in figures["import_cycles"]:
        print("import cycle: " + " <-> ".join(cycle))
    print(
        f"goals: no import cycles {verdict(not figures['import_cycles'])} · <= {MAX_LINES:,} lines {verdict(figures['lines'] <= MAX_LINES)}"
        f" · no file over {MAX_FILE} lines {verdict(not figures['over_limit'])}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
