"""What a source file runs, apart from its comments, docstrings and layout: two texts with the same substance
run alike. The 1.5B implementer "changed" train.py three times by rewriting it without its docstring, and each
rewrite counted as a change to measure."""

from __future__ import annotations

import ast

DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def substance(path: str, text: str) -> str:
    """A Python file's syntax tree without docstrings (comments and layout are not in it); any other file, or
    Python that does not parse, as it is."""
    if not path.endswith(".py"):
        return text
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text
    for node in ast.walk(tree):
        if isinstance(node, DOCUMENTED) and node.body and _is_docstring(node.body[0]):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )
