"""A change to comments, docstrings or layout alone is no change to what the code runs."""

from __future__ import annotations

import re
from pathlib import Path

from aiscientist.util.substance import runs_alike, substance

TRAIN = '''"""Train a polynomial."""

import json

EPOCHS = 40  # how long


def main() -> None:
    """Fit it."""
    print(json.dumps(EPOCHS))
'''


def test_comments_docstrings_and_layout_are_not_substance() -> None:
    rewritten = "import json\nEPOCHS = 40\ndef main() -> None:\n    print(json.dumps(EPOCHS))\n"
    assert substance("train.py", rewritten) == substance("train.py", TRAIN)
    assert substance("train.py", TRAIN.replace("EPOCHS = 40", "EPOCHS = 50")) != substance("train.py", TRAIN)
    only_doc = 'def f():\n    """only a docstring"""\n'
    assert substance("a.py", only_doc) == substance("a.py", "def f():\n    pass\n")  # still a function
    assert substance("a.py", "x = 'text'\n") != substance("a.py", "x = 'other'\n")  # a string that is not a docstring


def test_other_files_and_broken_python_are_compared_as_text() -> None:
    assert substance("config.yaml", "a: 1  # c\n") != substance("config.yaml", "a: 1\n")
    assert substance("train.py", "def (:\n") == "def (:\n"


def test_runs_alike_compares_files_by_substance() -> None:
    before = {"train.py": TRAIN, "config.yaml": "a: 1\n"}
    assert runs_alike(before, dict(before))
    assert runs_alike(before, {**before, "train.py": TRAIN.replace("# how long", "# epochs")})
    assert not runs_alike(before, {**before, "train.py": TRAIN.replace("EPOCHS = 40", "EPOCHS = 50")})
    assert not runs_alike(before, {**before, "config.yaml": "a: 1 \n"})
    assert not runs_alike(before, {**before, "new.py": ""})  # a file written is a change
    assert not runs_alike(before, {"train.py": TRAIN})  # so is one removed


def test_constants_differ_by_type_and_text() -> None:
    assert substance("a.py", "x = 1\n") != substance("a.py", "x = 1.0\n")
    assert substance("a.py", "x = 1\n") != substance("a.py", "x = True\n")
    assert substance("a.py", "x = 'a'\n") != substance("a.py", "x = b'a'\n")
    assert substance("a.py", "x = (1)\n") == substance("a.py", "x = 1  # one\n")


def test_the_compiled_outline_never_contradicts_the_syntax_trees() -> None:
    """runs_alike tells most changes apart by their compiled names and constants, without parsing; on the project's
    own files changed in a constant, a docstring, a comment, a string or a name, its verdict is the syntax trees'."""
    root = Path(__file__).resolve().parents[2] / "aiscientist"
    changes = [
        lambda t: re.sub(r"\b(\d+)\b", lambda m: str(int(m.group(1)) + 1), t, count=1),  # a constant
        lambda t: t.replace('"""', '"""Also: ', 1),  # the module's docstring
        lambda t: t.replace('    """', '    """Also: ', 1),  # a function's or class's
        lambda t: t.replace("  # ", "  # and ", 1),  # a comment
        lambda t: t.replace('"', '"x', 2),  # a string (or a docstring and a string)
        lambda t: t.replace("self", "this", 1),  # a name
        lambda t: re.sub(r'^""".*?"""\n', "", t, count=1, flags=re.S),  # the module's docstring removed
    ]
    pairs = 0
    for path in sorted(root.rglob("*.py"))[::6]:
        text = path.read_text()
        for change in changes:
            changed = change(text)
            if changed != text:
                alike = substance(path.name, text) == substance(path.name, changed)
                assert runs_alike({path.name: text}, {path.name: changed}) is alike, (path, change)
                pairs += 1
    assert pairs > 100
