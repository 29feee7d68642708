"""What a source file runs, apart from its comments, docstrings and layout: two texts with the same substance
run alike. The 1.5B implementer "changed" train.py three times by rewriting it without its docstring, and each
rewrite counted as a change to measure."""

from __future__ import annotations

import ast
import functools
import gc
import hashlib
import types
from collections.abc import Iterator
from contextlib import contextmanager

DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@functools.lru_cache(maxsize=16)  # implementation compares the code before and after each call: one text recurs
def substance(path: str, text: str) -> str:
    """A Python file's syntax tree without docstrings (comments and layout are not in it), as the SHA-256 of its
    `_tokens`; any other file, or Python that does not parse, as it is."""
    if not path.endswith(".py"):
        return text
    with _collector_paused():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return text
        tokens: list[str] = []
        _tokens(tree, tokens)
    return "python syntax tree " + hashlib.sha256("\n".join(tokens).encode()).hexdigest()


def runs_alike(before: dict[str, str], after: dict[str, str]) -> bool:
    """Whether two versions of a set of files (path -> text) have the same substance; only the texts that
    differ are compared, and Python whose compiled outlines differ is not parsed."""
    return before.keys() == after.keys() and all(
        text == after[rel] or _same_substance(rel, text, after[rel]) for rel, text in before.items()
    )


def _same_substance(path: str, before: str, after: str) -> bool:
    if path.endswith(".py"):
        outlines = _outline(path, before), _outline(path, after)
        if None not in outlines and outlines[0] != outlines[1]:
            return False  # the usual change (a constant, a call) is told apart without building syntax trees
    return substance(path, before) == substance(path, after)


@functools.lru_cache(maxsize=16)  # an edit's text is compiled by the syntax warning, then compared here
def compiled(path: str, text: str) -> types.CodeType | Exception:
    """`text` compiled as the file `path`, or why it does not compile."""
    try:
        return compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        return err


def compile_error(path: str, text: str) -> str | None:
    """Why a Python file's text does not compile ("line 3: unexpected indent"); None when it does or `path` is
    no Python file."""
    err = compiled(path, text) if path.endswith(".py") else None
    if not isinstance(err, Exception):
        return None
    where = f"line {err.lineno}: " if isinstance(err, SyntaxError) and err.lineno else ""
    return f"{where}{getattr(err, 'msg', err)}"


@functools.lru_cache(maxsize=16)
def _outline(path: str, text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The names and the constants other than strings that `text`'s compiled code (nested code too) holds, sorted;
    None when it does not compile. Syntax trees equal but for their docstrings compile to equal outlines (a
    docstring is a string constant, stored as the name `__doc__`), so unequal outlines mean unequal substance, at
    the cost of a compile and without the syntax tree's objects (a 340-line file: ~0.1 ms here, ~3 ms to parse)."""
    code = compiled(path, text)
    if not isinstance(code, types.CodeType):
        return None
    names: list[str] = []
    constants: list[str] = []
    stack = [code]
    while stack:
        current = stack.pop()
        names += (name for name in current.co_names if name != "__doc__")
        for constant in current.co_consts:
            if isinstance(constant, types.CodeType):
                stack.append(constant)
            elif not isinstance(constant, str):
                constants.append(f"{type(constant).__name__}:{constant!r}")
    return tuple(sorted(names)), tuple(sorted(constants))


def _tokens(node: object, out: list[str]) -> None:
    """A syntax tree as `ast.dump` spells it, in tokens that join unambiguously with newlines: a node's type name,
    its fields (positions are attributes, not fields) and ")"; a list's items between "[" and "]"; any other
    value's repr (which holds no newline). A documented node's body is without its docstring. Flat strings, not
    nested tuples or `ast.dump`'s text: ~3x faster."""
    if isinstance(node, list):
        out.append("[")
        for item in node:
            _tokens(item, out)
        out.append("]")
    elif isinstance(node, ast.AST):
        out.append(type(node).__name__)
        for name in node._fields:
            value = getattr(node, name, None)
            if name == "body" and isinstance(node, DOCUMENTED) and value and _is_docstring(value[0]):
                value = value[1:] or [ast.Pass()]
            _tokens(value, out)
        out.append(")")
    else:
        out.append(repr(node))


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile: a syntax tree holds no cycles (reference counts free it), yet its
    thousands of objects set off collections that, in a run's process of ~500k objects, made a 300-line file's
    comparison take 12 ms instead of 5."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
