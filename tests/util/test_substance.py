"""A change to comments, docstrings or layout alone is no change to what the code runs."""

from __future__ import annotations

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
