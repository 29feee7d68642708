"""PaperBench's graded-tree format (the fields of its `GradedTaskNode`, in its key order): read
it, write it, and re-score it from its leaves. PaperBench's JudgeEval `expected_result.json` files
are such trees, and so is our `grade.json`; a subtree graded as a whole is written as a leaf of
task category "Subtree", as PaperBench does.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aiscientist.util import untrusted
from aiscientist.util.text import clean
from bench.paper.rubric import (
    GradedNode,
    NodePath,
    RubricError,
    RubricNode,
    SubTaskTree,
    first_error,
    parse_tree,
    path_label,
    weighted_mean,
)

AGGREGATED = "Aggregated score from sub-tasks."
SUBTREE = "Subtree"
GRADED_BYTES = 64 << 20


class PaperBenchNode(SubTaskTree, BaseModel):
    """One node of a PaperBench graded tree; unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    id: str
    requirements: str
    weight: Annotated[int | float, Field(ge=0)]
    score: Annotated[float, Field(ge=0, le=1)]
    valid_score: bool
    task_category: str | None
    explanation: str
    judge_metadata: Any = None  # PaperBench does not type it; real files hold dicts, null, even ""
    sub_tasks: list[PaperBenchNode] = Field(default_factory=list)

    def to_rubric(self) -> RubricNode:
        """The rubric this tree grades (a "Subtree" leaf cannot be turned back into one)."""
        if self.is_leaf and self.task_category == SUBTREE:
            raise RubricError(f"node {self.id!r} is a subtree graded as a whole; its criteria are not in the file")
        category = self.task_category if self.is_leaf else None
        fine = (self.model_extra or {}).get("finegrained_task_category") if self.is_leaf else None
        children = [child.to_rubric() for child in self.sub_tasks]
        data = {
            "id": self.id,
            "requirements": self.requirements,
            "weight": self.weight,
            "sub_tasks": [],
            "task_category": category,
            "finegrained_task_category": fine,
        }
        try:
            return RubricNode.model_validate(data).with_sub_tasks(children)
        except ValidationError as err:
            raise RubricError(f"node {self.id!r}: {first_error(err)}") from None


def parse_graded(data: Any) -> PaperBenchNode:
    """A graded tree from JSON data; a bad node is named by id and path. A PaperBench
    judge output (with the tree under `graded_task_tree`) is accepted too."""
    if isinstance(data, dict) and "graded_task_tree" in data:
        data = data["graded_task_tree"]

    def build(raw: dict[str, Any], children: list[PaperBenchNode]) -> PaperBenchNode:
        return PaperBenchNode.model_validate({**raw, "sub_tasks": []}).model_copy(update={"sub_tasks": children})

    return parse_tree(data, build)


def load_graded(path: str | Path) -> PaperBenchNode:
    """A graded tree file, which may come from an untrusted folder (a JudgeEval case): read
    without following a link, at most GRADED_BYTES, nested at most JSON_DEPTH levels."""
    path = Path(path)
    try:
        data = untrusted.loads_json(untrusted.read_file(path.parent, path.name, GRADED_BYTES))
    except untrusted.Unreadable as err:
        raise RubricError(
            f"{path}: graded tree file {'not found' if err.reason == 'missing' else err.reason}"
        ) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise RubricError(f"{path}: invalid JSON: {clean(err, 300)}") from None
    try:
        return parse_graded(data)
    except RubricError as err:
        raise RubricError(f"{path}: {err}") from None


class Mismatch(BaseModel):
    path: str
    id: str
    stored: float
    computed: float


def rescore(node: PaperBenchNode, path: NodePath = ()) -> tuple[float, list[Mismatch]]:
    """The node's score re-aggregated from its leaves' scores, and every node whose
    stored score differs from the re-aggregated one (beyond rounding)."""
    if node.is_leaf:
        return node.score, []
    rescored = [rescore(child, (*path, i)) for i, child in enumerate(node.sub_tasks)]
    computed = weighted_mean([(child.weight, score) for child, (score, _) in zip(node.sub_tasks, rescored)])
    mismatches = [mismatch for _, below in rescored for mismatch in below]
    if not math.isclose(computed, node.score, rel_tol=1e-9, abs_tol=1e-9):
        mismatches.insert(0, Mismatch(path=path_label(path), id=node.id, stored=node.score, computed=computed))
    return computed, mismatches


def to_paperbench(node: GradedNode) -> dict[str, Any]:
    """Our graded tree in PaperBench's format: a graded node's explanation and judge
    metadata (how it was graded, the judge's reading, tokens); aggregates as PaperBench writes them."""
    graded = node.method != "aggregate"
    metadata = None
    if graded:
        metadata = {"method": node.method, **(node.judge_metadata or {})}
        if node.finegrained_task_category:
            metadata["finegrained_task_category"] = node.finegrained_task_category
    return {
        "id": node.id,
        "requirements": node.requirements,
        "weight": node.weight,
        "score": node.score,
        "valid_score": node.valid,
        "task_category": SUBTREE if node.subtree else node.task_category,
        "explanation": node.explanation if graded else AGGREGATED,
        "judge_metadata": metadata,
        "sub_tasks": [to_paperbench(child) for child in node.sub_tasks],
    }


def graded_json(node: GradedNode) -> str:
    """Our graded tree as PaperBench writes its own (indent 4)."""
    return json.dumps(to_paperbench(node), indent=4) + "\n"
