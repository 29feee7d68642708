"""Candidate changes found in source text without understanding the method.

A candidate is a numeric literal or boolean assigned to a name: a module constant
(`LR = 0.05`), an annotated assignment, a keyword default (`def f(x, lr=0.1)`,
`Model(dropout=0.5)`), an argparse `default=` (named after its `--flag`), or a
`key: value` line of a YAML/INI-like file. `perturb` turns one into an exact
`(old, new)` text pair for `edit_file`: numbers are scaled up or down, booleans
toggled. A candidate's `rank` says how plainly it is meant to be tuned: a command-line option
or a config key (0), an assigned constant (1), a keyword of a call or a function's default (2).
Used by the offline policy (`aiscientist.llm.offline`) and the non-LLM `hpsearch` baseline.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from typing import Literal

# Names whose values are bookkeeping, not method: changing them is noise-mining, breaks
# I/O or shapes. A name is skipped when one of its `_`-separated words is in SKIP_WORDS
# or the whole name is in SKIP_NAMES.
SKIP_WORDS = frozenset(
    "seed verbose verbosity debug worker workers port gpu gpus device rank log logging print save checkpoint ckpt "
    "version interval every".split()
)
SKIP_NAMES = frozenset(
    "indent figsize dpi fontsize exist_ok parents flush sort_keys ensure_ascii pin_memory non_blocking inplace "
    "dim axis keepdim keepdims protocol timeout maxsplit".split()
)
NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
KEY_VALUE = re.compile(
    rf"^(?P<key>\s*[\"']?(?P<name>[A-Za-z_][\w.-]*)[\"']?\s*[:=]\s*)(?P<value>{NUMBER}|true|false|True|False)(?P<rest>"
    r"\s*,?\s*(?:#.*)?)$"
)


@dataclass(frozen=True)
class Candidate:
    name: str
    kind: Literal["number", "bool"]
    value: str  # the literal as written
    line: int  # 1-based
    start: int  # column range of the literal within the line
    end: int
    rank: int = 2  # 0: a command-line option or config key, 1: an assigned constant, 2: a call or function keyword


@dataclass(frozen=True)
class Change:
    """An exact edit: `old` occurs once in the source; replacing it with `new` makes the change."""

    name: str
    before: str
    after: str
    old: str
    new: str
    line: int

    @property
    def description(self) -> str:
        return f"{self.name}: {self.before} -> {self.after} (line {self.line})"


def skipped(name: str) -> bool:
    lowered = name.lower()
    return lowered in SKIP_NAMES or not SKIP_WORDS.isdisjoint(re.split(r"[_.\-]+", lowered))


def find_candidates(source: str) -> list[Candidate]:
    """Tunable literals in `source` (Python if it parses, else `key: value` lines)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _key_value_candidates(source)
    # `lr: 0.1` parses as a Python annotation: a YAML file yields nothing here
    return _python_candidates(source, tree) or _key_value_candidates(source)


def _python_candidates(source: str, tree: ast.Module) -> list[Candidate]:
    lines = source.splitlines()
    found: dict[tuple[int, int], Candidate] = {}

    def add(name: str | None, node: ast.expr, rank: int = 2) -> None:
        if name is None or skipped(name) or node.lineno != node.end_lineno:
            return
        if not isinstance(node, ast.Constant) or node.col_offset is None:
            return
        value = node.value
        text = lines[node.lineno - 1][node.col_offset : node.end_col_offset]
        if isinstance(value, bool):
            kind: Literal["number", "bool"] = "bool"
        elif isinstance(value, (int, float)) and value != 0 and re.fullmatch(NUMBER, text):
            kind = "number"
        else:
            return
        found[(node.lineno, node.col_offset)] = Candidate(
            name, kind, text, node.lineno, node.col_offset, node.end_col_offset, rank
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            add(_target_name(node.targets[0]), node.value, 1)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            add(_target_name(node.target), node.value, 1)
        elif isinstance(node, ast.Call):
            flag = _argparse_flag(node)
            for kw in node.keywords:
                option = kw.arg == "default" and flag
                add(flag if option else kw.arg, kw.value, 0 if option else 2)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
                add(arg.arg, default)
            for arg, default in zip(args.kwonlyargs, args.kw_defaults):
                if default is not None:
                    add(arg.arg, default)
    return sorted(found.values(), key=lambda c: (c.line, c.start))


def _target_name(target: ast.expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def _argparse_flag(call: ast.Call) -> str | None:
    """`--lr` of `parser.add_argument("--lr", default=...)`, without dashes."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "add_argument"):
        return None
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--"):
            return arg.value.lstrip("-").replace("-", "_")
    return None


def _key_value_candidates(source: str) -> list[Candidate]:
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = KEY_VALUE.match(line)
        if not match or skipped(match["name"]):
            continue
        value = match["value"]
        kind: Literal["number", "bool"] = "bool" if value.lower() in ("true", "false") else "number"
        if kind == "number" and float(value) == 0:
            continue
        found.append(Candidate(match["name"], kind, value, number, match.start("value"), match.end("value"), 0))
    return found


def perturb(source: str, candidate: Candidate, rng: random.Random, up: bool | None = None) -> Change | None:
    """A seeded change of one candidate (numbers scaled `up` or down; None: the seed
    decides), or None when its line is not unique in `source` (then no exact `old`
    text would identify it)."""
    line = source.splitlines()[candidate.line - 1]
    if source.count(line) != 1:
        return None
    after = _toggle(candidate.value) if candidate.kind == "bool" else _scale(candidate.value, rng, up)
    if candidate.kind == "number" and float(after) == float(candidate.value):
        return None  # the value's precision leaves no room to move (a no-op change is never proposed)
    new_line = line[: candidate.start] + after + line[candidate.end :]
    return Change(candidate.name, candidate.value, after, line, new_line, candidate.line)


def propose_changes(source: str, rng: random.Random, n: int = 1, exclude: set[str] = frozenset()) -> list[Change]:
    """Up to `n` changes to distinct candidates, chosen by `rng`; candidates whose
    name is in `exclude` are left alone."""
    pool = [c for c in find_candidates(source) if c.name not in exclude]
    rng.shuffle(pool)
    changes = []
    for candidate in pool:
        change = perturb(source, candidate, rng)
        if change is not None:
            changes.append(change)
        if len(changes) == n:
            break
    return changes


def _toggle(value: str) -> str:
    return {"True": "False", "False": "True", "true": "false", "false": "true"}[value]


def _scale(value: str, rng: random.Random, up: bool | None = None) -> str:
    """Halve or double; fractions in (0, 1) move half-way towards 0 or 1 instead of
    crossing 1 (so 0.9 momentum becomes 0.45 or 0.95, not 1.8)."""
    up = rng.random() < 0.5 if up is None else up
    is_int = re.fullmatch(r"[-+]?\d+", value) is not None
    number = float(value)
    if is_int:
        whole = int(number)
        halved = int(whole / 2)
        return str(whole * 2 if up or halved == 0 else halved)
    if up:
        new = (1 + number) / 2 if 0 < number < 1 and number * 2 >= 1 else number * 2
    else:
        new = number / 2
    if "e" in value.lower():  # keep scientific notation: 1e-3 -> 2e-3
        mantissa, exponent = f"{new:.4e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    text = f"{new:.6g}"
    return text if any(ch in text for ch in ".e") else text + ".0"
