"""The code's shape, measured against the house rules (issue #28).

Counts every `.py` file outside `tests/` and `bench/tasks/` (the task repositories are
data), in total and as code only (no blank lines, comments or docstrings), and checks:
no folder with more than 12 modules of its own; at most 4 top-level modules in
`aiscientist/`; no import cycle, function-local imports included (only imports under
`if TYPE_CHECKING:` are left out: they never run) and no module-level import that runs back
up the layers (`LAYERS`; nothing in `aiscientist` imports `bench`); no file over 400 lines
and no line over 120 characters; run-folder file names spelled only in `aiscientist/records/`;
no block of REPEAT_LINES lines repeated to the letter (`repeated_blocks`); no class name
defined in two modules (`duplicated_classes`: one name per thing, nested classes included).
Exit 1 when a goal is not met.

    python benchmarks/structure.py [--json FILE]
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
PACKAGES = ("aiscientist", "bench", "benchmarks", "scripts")
MAX_FILE, MAX_LINE, MAX_MODULES, MAX_TOP = 400, 120, 12, 4
REPEAT_LINES = 6
# aiscientist's rooms, lowest first: a module imports only from its own room or lower ones
LAYERS = (
    "util records task resources sandbox config experiment llm workspace agent specialists orchestrator viewer cli"
).split() + ["__main__"]
RECORDS = ("aiscientist/records/paths.py", "aiscientist/records/cell.py")  # where run-folder names are defined


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


def _imported(statements: list[ast.stmt]) -> set[str]:
    """Every name the import statements among `statements` (and below them) import, with
    `from a import b` as both `a` and `a.b`; blocks under `if TYPE_CHECKING:` never run."""
    found: set[str] = set()
    work = list(statements)
    while work:
        node = work.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            work += node.orelse
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        work += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
    return found


def imports_at_load(tree: ast.Module, modules: set[str]) -> set[str]:
    """The project modules a module imports when it is loaded."""
    loaded = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom, ast.If, ast.Try))]
    return _imported(loaded) & modules


def all_imports(tree: ast.Module, modules: set[str]) -> set[str]:
    """The project modules a module imports at load or later (inside a function)."""
    return _imported(tree.body) & modules


def duplicated_classes(trees: dict[Path, ast.Module]) -> dict[str, list[str]]:
    """Class names defined in more than one module (nested classes too), with the modules."""
    where: dict[str, set[str]] = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, set()).add(path.relative_to(ROOT).as_posix())
    return {name: sorted(found) for name, found in sorted(where.items()) if len(found) > 1}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` for every import from a lower room of `aiscientist` to a higher one, or into `bench`."""
    found = []
    for module, targets in sorted(graph.items()):
        if not module.startswith("aiscientist."):
            continue
        for target in sorted(targets):
            low, high = _room(module), _room(target)
            if target.startswith("bench") or (
                target.startswith("aiscientist.")
                and low in LAYERS
                and high in LAYERS
                and LAYERS.index(high) > LAYERS.index(low)
            ):
                found.append(f"{module} -> {target}")
    return found


def _resolve(node: ast.AST | None, env: dict[str, str]) -> str | None:
    """A string constant's value: a literal, a name defined before, or an f-string of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = [_resolve(v.value if isinstance(v, ast.FormattedValue) else v, env) for v in node.values]
        return "".join(p if p is not None else "{}" for p in parts)
    return None


def run_folder_names() -> tuple[set[str], set[str]]:
    """Every area, folder and file name a run folder or a bench results folder holds: the
    parts of the names (module-level string constants) of `RECORDS`, patterns left out;
    and the run folder's areas (`AREAS`)."""
    env: dict[str, str] = {}
    areas: set[str] = set()
    for rel in RECORDS:
        for node in ast.parse((ROOT / rel).read_text()).body:
            if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
                continue
            name = node.targets[0].id
            if name == "AREAS" and isinstance(node.value, ast.Tuple):
                areas.update(filter(None, (_resolve(v, env) for v in node.value.elts)))
            elif (value := _resolve(node.value, env)) is not None:
                env[name] = value
    names = {p for value in env.values() for p in value.split("/") if p and not any(c in p for c in "{}()*\\")}
    return names, areas


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _spells(value: str, names: set[str]) -> bool:
    """Whether a string spells a run-folder name: a file name as the whole string, or a
    name as a part of a path (`a/b`) anywhere in it (an address is not a path)."""
    if value in names and "." in value:
        return True
    for token in value.replace("`", " ").replace("(", " ").replace(")", " ").replace(",", " ").split():
        if "/" in token and "://" not in token and any(p.rstrip(".:;") in names for p in token.split("/")):
            return True
    return False


def run_folder_literals(trees: dict[Path, ast.Module]) -> list[str]:
    """`file:line text` for every string outside `aiscientist/records/` that spells a run-folder
    name (`run_folder_names`): in a path (`x / "name"`, `"a/name"`, `f"name/{rel}"`), an area
    compared (`area == "logs"`), or a file name on its own. Docstrings are prose, not counted."""
    names, areas = run_folder_names()
    found = []
    for path, tree in trees.items():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("aiscientist/records/"):
            continue
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            hit = []
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                hit = [n for n in (node.left, node.right) if isinstance(n, ast.Constant) and n.value in names]
            elif isinstance(node, ast.Compare):
                hit = [n for n in (node.left, *node.comparators) if isinstance(n, ast.Constant) and n.value in areas]
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                hit += [node] if _spells(node.value, names) else []
            found += [f"{rel}:{n.lineno} {n.value[:60]}" for n in hit]
    return sorted(set(found))


def _interface_lines(tree: ast.Module) -> set[int]:
    """Import statements and def signatures: what an interface and its implementation
    (a Protocol, an ABC, an override) or two modules' imports share by design."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[0]
            start = body.lineno if not isinstance(body, ast.Expr) or body.lineno > node.lineno else node.lineno + 1
            lines.update(range(node.lineno, start))
    return lines


def repeated_blocks(sources: dict[str, str], trees: dict[str, ast.Module] | None = None) -> list[str]:
    """`a:line ~ b:line` for each run of REPEAT_LINES lines that stands again elsewhere, the
    same to the letter once stripped (blank, comment-only and punctuation-only lines do not
    count, nor imports and def signatures); each pair of places is named once."""
    seen: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    found: dict[tuple[str, str, int], str] = {}
    for rel, text in sources.items():
        skip = _interface_lines(trees[rel] if trees else ast.parse(text))
        lines = [
            (n, line.strip())
            for n, line in enumerate(text.splitlines(), 1)
            if n not in skip and any(c.isalnum() for c in line) and not line.strip().startswith("#")
        ]
        for i in range(len(lines) - REPEAT_LINES + 1):
            key = tuple(line for _, line in lines[i : i + REPEAT_LINES])
            here = (rel, lines[i][0])
            for other in seen.get(key, []):
                found.setdefault((other[0], rel, here[1] - other[1]), f"{other[0]}:{other[1]} ~ {rel}:{here[1]}")
            seen.setdefault(key, []).append(here)
    return list(found.values())


def crowded_folders(files: list[Path]) -> dict[str, int]:
    """Folders holding more than MAX_MODULES modules of their own (`__init__` not counted)."""
    count = Counter(p.parent.relative_to(ROOT).as_posix() for p in files if p.name != "__init__.py")
    return {folder: n for folder, n in sorted(count.items()) if n > MAX_MODULES}


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
    every_import = {name: all_imports(trees[path], set(names)) - {name} for name, path in names.items()}
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
        "long_lines": [
            f"{p.relative_to(ROOT).as_posix()}:{n}"
            for p, text in sources.items()
            for n, line in enumerate(text.splitlines(), 1)
            if len(line) > MAX_LINE
        ],
        "crowded_folders": crowded_folders(files),
        "top_level_modules": sorted(p.name for p in (ROOT / "aiscientist").glob("*.py")),
        "import_cycles": cycles(every_import),
        "upward_imports": upward_imports(graph),
        "run_folder_literals": run_folder_literals(trees),
        "repeated_blocks": repeated_blocks(
            {p.relative_to(ROOT).as_posix(): text for p, text in sources.items()},
            {p.relative_to(ROOT).as_posix(): tree for p, tree in trees.items()},
        ),
        "duplicated_classes": duplicated_classes(trees),
    }


def goals(figures: dict) -> dict[str, bool]:
    return {
        "no import cycle": not figures["import_cycles"],
        "no upward import": not figures["upward_imports"],
        f"no file over {MAX_FILE} lines": not figures["over_limit"],
        f"no line over {MAX_LINE} characters": not figures["long_lines"],
        f"no folder over {MAX_MODULES} modules": not figures["crowded_folders"],
        f"<= {MAX_TOP} top-level modules in aiscientist/": len(figures["top_level_modules"]) <= MAX_TOP,
        "run-folder names only in records/": not figures["run_folder_literals"],
        f"no {REPEAT_LINES}-line block repeated": not figures["repeated_blocks"],
        "no class name in two modules": not figures["duplicated_classes"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures = measure()
    print(f"{figures['files']} files, {figures['lines']:,} lines of non-test Python outside bench/tasks/", end=" ")
    print(f"({figures['code_lines']:,} of code)")
    print("by folder: " + ", ".join(f"{name} {count:,}" for name, count in figures["lines_by_package"].items()))
    print("largest: " + ", ".join(f"{rel} ({count})" for rel, count in figures["largest"]))
    print(f"run-folder literals outside records/: {len(figures['run_folder_literals'])} (goal 0)")
    shown = ("import_cycles", "upward_imports", "over_limit", "long_lines", "run_folder_literals", "repeated_blocks")
    for key in shown:
        for item in figures[key][:20]:
            print(f"{key.replace('_', ' ')}: {' <-> '.join(item) if key == 'import_cycles' else item}")
    for name, modules in figures["duplicated_classes"].items():
        print(f"duplicated class: {name} in {', '.join(modules)}")
    for folder, count in figures["crowded_folders"].items():
        print(f"crowded folder: {folder} ({count} modules)")
    met = goals(figures)
    print("goals: " + " · ".join(f"{goal} {'met' if ok else 'NOT met'}" for goal, ok in met.items()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0 if all(met.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
