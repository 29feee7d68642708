"""Machine-checkable rubric criteria (our extension to PaperBench's rubric format).

A `check` on a Code Execution or Result Analysis leaf is decided from the files the reproduction
created or changed (a submission cannot pass by shipping a results file). Paths are relative to the
submission root; a JSON `path` is dot-separated, or a list of keys (integers index lists). Examples:

    {"type": "json_metric", "file": "results/metrics.json", "path": "ece.smoothed", "value": 0.03, "tolerance": 0.01}
    {"type": "json_compare", "file": "results/metrics.json",
     "left": ["results", "0.1", "ece"], "op": ">", "right": ["results", "0", "ece"]}
    {"type": "file_exists", "file": "results/table.md"}
    {"type": "text_match", "file": "results/table.md", "pattern": "(?i)epsilon"}
"""

from __future__ import annotations

import math
import operator
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from aiscientist.util import untrusted
from aiscientist.util.text import clean
from aiscientist.util.untrusted import loads_json

JsonPath = str | list[str | int]

CHECK_BYTES = 64 << 20  # a produced file larger than this fails its check unread
_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


class CheckOutcome(BaseModel):
    passed: bool
    explanation: str


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str = Field(min_length=1)

    def evaluate(self, root: Path, produced: set[str]) -> CheckOutcome:
        """Decide the check on the reproduced copy at `root`; `produced` holds the
        relative paths that the reproduction created or changed."""
        if self.file not in produced:
            where = (
                "exists but was not produced by the reproduction" if _present(root, self.file) else "was not produced"
            )
            return CheckOutcome(passed=False, explanation=f"{self.file} {where}")
        try:  # untrusted: no link followed, bounded
            data = untrusted.read_file(root, self.file, CHECK_BYTES, hard_links=True)
        except untrusted.Unreadable:
            return CheckOutcome(
                passed=False,
                explanation=f"{self.file} is not a regular file inside the submission of at most {CHECK_BYTES} bytes"
                " (links are not followed)",
            )
        try:
            return self._decide(data)
        except (ValueError, KeyError, IndexError, TypeError) as err:
            return CheckOutcome(passed=False, explanation=f"{self.file}: {type(err).__name__}: {clean(err, 300)}")

    def _decide(self, data: bytes) -> CheckOutcome:
        raise NotImplementedError


class FileExists(_Check):
    type: Literal["file_exists"]

    def _decide(self, data: bytes) -> CheckOutcome:
        return CheckOutcome(passed=True, explanation=f"{self.file} was produced")


class TextMatch(_Check):
    type: Literal["text_match"]
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(f"invalid regular expression: {err}") from None
        return value

    def _decide(self, data: bytes) -> CheckOutcome:
        found = re.search(self.pattern, data.decode(errors="replace"), re.MULTILINE)
        return CheckOutcome(
            passed=found is not None,
            explanation=f"pattern {self.pattern!r} {'found' if found else 'not found'} in {self.file}",
        )


class JsonMetric(_Check):
    type: Literal["json_metric"]
    path: JsonPath
    value: float
    tolerance: float = Field(0.0, ge=0)

    def _decide(self, data: bytes) -> CheckOutcome:
        got = number_at(loads_json(data), self.path)
        passed = abs(got - self.value) <= self.tolerance + 1e-12
        return CheckOutcome(
            passed=passed,
            explanation=f"{self.file}:{_label(self.path)} = {got:g}; expected {self.value:g} ± {self.tolerance:g}",
        )


class JsonCompare(_Check):
    type: Literal["json_compare"]
    left: JsonPath
    op: Literal["<", "<=", ">", ">="]
    right: JsonPath

    def _decide(self, data: bytes) -> CheckOutcome:
        parsed = loads_json(data)
        a, b = number_at(parsed, self.left), number_at(parsed, self.right)
        passed = _OPS[self.op](a, b)
        return CheckOutcome(
            passed=passed,
            explanation=f"{_label(self.left)} = {a:g} {self.op} {_label(self.right)} = {b:g}: "
            f"{'holds' if passed else 'does not hold'}",
        )


Check = Annotated[FileExists | TextMatch | JsonMetric | JsonCompare, Field(discriminator="type")]


def _present(root: Path, rel: str) -> bool:
    """Whether `root/rel` is a regular file reached without following a link (the copy is untrusted)."""
    try:
        os.close(untrusted.open_file(root, rel, hard_links=True))
    except untrusted.Unreadable:
        return False
    return True


def number_at(data: Any, path: JsonPath) -> float:
    """The finite number at `path` in JSON data."""
    keys = path.split(".") if isinstance(path, str) else path
    value = data
    for key in keys:
        if isinstance(value, list):
            value = value[int(key)]
        elif isinstance(value, dict):
            if str(key) not in value:
                raise KeyError(f"no key {key!r} at {_label(path)}")
            value = value[str(key)]
        else:
            raise TypeError(f"cannot look up {key!r} in a {type(value).__name__}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{_label(path)} is {value!r}, not a finite number")
    return float(value)


def _label(path: JsonPath) -> str:
    return path if isinstance(path, str) else "/".join(str(k) for k in path)
