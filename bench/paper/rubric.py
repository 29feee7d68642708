"""PaperBench rubric trees: load, validate, dump unchanged, filter, and score.

Our one extension to the format is an optional `check` on Code Execution / Result Analysis
leaves (`bench.paper.checks`). Unknown keys are kept, and the file's key order and JSON layout
remembered, so `dumps(load(text))` gives back the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from aiscientist.util.untrusted import loads_json
from bench.paper.checks import Check

TaskCategory = Literal["Code Development", "Code Execution", "Result Analysis"]
FinegrainedCategory = Literal[
    "Environment & Infrastructure Setup",
    "Dataset and Model Acquisition",
    "Data Processing & Preparation",
    "Method Implementation",
    "Experimental Setup",
    "Evaluation, Metrics & Benchmarking",
    "Logging, Analysis & Presentation",
]
TASK_CATEGORIES: tuple[str, ...] = get_args(TaskCategory)
FINEGRAINED_CATEGORIES: tuple[str, ...] = get_args(FinegrainedCategory)
CODE_DEV = "Code Development"
NodePath = tuple[int, ...]
T = TypeVar("T")
_CORE_KEYS = ("id", "requirements", "weight", "sub_tasks", "task_category", "finegrained_task_category")


class RubricError(ValueError):
    """A rubric is unusable; the message names the file, the node and the reason."""


def path_label(path: NodePath) -> str:
    """A node's path for people: "root", or child indices joined by dots ("1.0.10")."""
    return ".".join(map(str, path)) if path else "root"


def first_error(err: ValidationError) -> str:
    """The first problem pydantic found, as "field.path: message"."""
    first = err.errors()[0]
    return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"


class SubTaskTree:
    """Walking a tree of nodes that hold their children in `sub_tasks` (rubrics and graded trees)."""

    sub_tasks: list

    @property
    def is_leaf(self) -> bool:
        return not self.sub_tasks

    def walk_paths(self, path: NodePath = ()) -> Iterator[tuple[NodePath, Any]]:
        """(path, node) for this node and its descendants, depth first; a path is the
        child indices from the root, the one address that stays unique when ids repeat."""
        yield path, self
        for i, child in enumerate(self.sub_tasks):
            yield from child.walk_paths((*path, i))

    def walk(self) -> Iterator[Any]:
        return (node for _, node in self.walk_paths())


class RubricNode(SubTaskTree, BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1)
    requirements: str
    weight: Annotated[int | float, Field(ge=0)]
    sub_tasks: list[RubricNode] = Field(default_factory=list)
    task_category: TaskCategory | None = None
    finegrained_task_category: FinegrainedCategory | None = None
    check: Check | None = None
    # The node's JSON object as read from a file (None for nodes built in code).
    _raw: dict[str, Any] | None = PrivateAttr(default=None)

    def leaves(self) -> list[RubricNode]:
        return [node for node in self.walk() if node.is_leaf]

    def find(self, node_id: str) -> RubricNode:
        for node in self.walk():
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def with_sub_tasks(self, sub_tasks: list[RubricNode]) -> RubricNode:
        copy = self.model_copy(update={"sub_tasks": sub_tasks})
        copy._raw = self._raw
        return copy

    def to_dict(self) -> dict[str, Any]:
        """The node as JSON data: a node read from a file gives back its object
        unchanged (key order, extra keys, absent keys) except for its children."""
        if self._raw is not None:
            return {k: [c.to_dict() for c in self.sub_tasks] if k == "sub_tasks" else v for k, v in self._raw.items()}
        data: dict[str, Any] = {k: getattr(self, k) for k in _CORE_KEYS}
        data["sub_tasks"] = [c.to_dict() for c in self.sub_tasks]
        data.update(self.model_extra or {})
        if self.check is not None:
            data["check"] = self.check.model_dump(mode="json")
        return data


def parse_tree(data: Any, build: Callable[[dict[str, Any], list[T]], T], path: NodePath = ()) -> T:
    """A tree from JSON data, children first; `build(data, children)` makes one node.
    A bad node is named by its id and path."""
    if not isinstance(data, dict):
        raise RubricError(f"node at {path_label(path)}: expected a JSON object, got {type(data).__name__}")
    where = f"node {data.get('id', '?')!r} (at {path_label(path)})"
    if not isinstance(data.get("sub_tasks"), list):
        raise RubricError(f"{where}: sub_tasks must be a list ([] on a leaf)")
    children = [parse_tree(child, build, (*path, i)) for i, child in enumerate(data["sub_tasks"])]
    try:
        return build(data, children)
    except ValidationError as err:
        raise RubricError(f"{where}: {first_error(err)}") from None


def parse_node(data: Any) -> RubricNode:
    """A rubric from JSON data, keeping the data so `to_dict` can give it back unchanged."""

    def build(raw: dict[str, Any], children: list[RubricNode]) -> RubricNode:
        node = RubricNode.model_validate({**raw, "sub_tasks": []}).with_sub_tasks(children)
        node._raw = raw
        return node

    return parse_tree(data, build)


def validate(root: RubricNode) -> None:
    """The structural rules PaperBench relies on, plus ours for `check`. Ids need not be
    unique (real PaperBench rubrics repeat some); nodes are addressed by their path."""
    if root.is_leaf:
        raise RubricError("empty rubric: the root node has no sub_tasks")
    for path, node in root.walk_paths():
        where = f"{node.id!r} (at {path_label(path)})"
        if node.is_leaf:
            if node.task_category is None:
                raise RubricError(f"leaf {where} has no task_category (one of {', '.join(TASK_CATEGORIES)})")
            if node.check is not None and node.task_category == CODE_DEV:
                raise RubricError(
                    f"leaf {where}: a check grades reproduction outputs, so it cannot sit on a Code Development leaf"
                )
        else:
            for field in ("task_category", "finegrained_task_category", "check"):
                if getattr(node, field) is not None:
                    raise RubricError(f"internal node {where} has {field} set; only leaves may carry it")


class Rubric(BaseModel):
    """A rubric and how its file was laid out, so dumping reproduces it."""

    root: RubricNode
    indent: int | None = 4
    ensure_ascii: bool = True
    trailing_newline: bool = True

    def dumps(self) -> str:
        text = json.dumps(self.root.to_dict(), indent=self.indent, ensure_ascii=self.ensure_ascii)
        return text + ("\n" if self.trailing_newline else "")

    def dump(self, path: Path) -> None:
        Path(path).write_text(self.dumps(), encoding="utf-8")


def loads(text: str, source: str = "<rubric>") -> Rubric:
    if not text.strip():
        raise RubricError(f"{source}: empty rubric file")
    try:
        data = loads_json(text.encode())  # depth-limited: a rubric may come from a dataset
    except ValueError as err:
        raise RubricError(f"{source}: invalid JSON: {err}") from None
    if data in ({}, [], None):
        raise RubricError(f"{source}: empty rubric: no root node")
    try:
        root = parse_node(data)
        validate(root)
    except RubricError as err:
        raise RubricError(f"{source}: {err}") from None
    indent = re.search(r"\{\n( +)\"", text)
    # json.dumps escapes non-ASCII unless told not to; a file holding raw non-ASCII was written without.
    return Rubric(
        root=root,
        indent=len(indent.group(1)) if indent else None,
        ensure_ascii=text.isascii(),
        trailing_newline=text.endswith("\n"),
    )


def load(path: str | Path) -> Rubric:
    path = Path(path)
    if not path.is_file():
        raise RubricError(f"{path}: rubric file not found")
    return loads(path.read_text(encoding="utf-8"), str(path))


def code_dev_view(root: RubricNode) -> RubricNode | None:
    """Only Code Development leaves; internal nodes left without children disappear.
    Weights are kept: a node's score is a weighted mean over the children that remain,
    so the weights renormalise by themselves."""
    if root.is_leaf:
        return root if root.task_category == CODE_DEV else None
    kept = [child for child in (code_dev_view(c) for c in root.sub_tasks) if child is not None]
    return root.with_sub_tasks(kept) if kept else None


class LeafGrade(BaseModel):
    """The grade of one graded node: a leaf (0 or 1) or a subtree cut off by a depth
    limit (continuous in [0, 1]). `valid` is False when grading itself failed."""

    score: float = Field(ge=0, le=1)
    valid: bool = True
    explanation: str = ""
    method: Literal["check", "judge", "rule", "offline", "error"] = "judge"
    judge_metadata: dict[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class GradedNode(SubTaskTree, BaseModel):
    id: str
    requirements: str
    weight: int | float
    task_category: str | None = None
    finegrained_task_category: str | None = None
    score: float
    valid: bool
    explanation: str = ""
    method: str = "aggregate"
    judge_metadata: dict[str, Any] | None = None
    subtree: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    sub_tasks: list[GradedNode] = Field(default_factory=list)


def graded_targets(root: RubricNode, max_depth: int | None = None) -> list[tuple[NodePath, RubricNode, bool]]:
    """The nodes a judge must grade, by path, with True for a subtree graded as a whole:
    leaves, and with `max_depth` (root = 0) the internal nodes at that depth."""

    def graded(path: NodePath, node: RubricNode) -> bool:
        if max_depth is None or len(path) < max_depth:
            return node.is_leaf
        return len(path) == max_depth

    return [(path, node, not node.is_leaf) for path, node in root.walk_paths() if graded(path, node)]


def aggregate(root: RubricNode, grades: dict[NodePath, LeafGrade], path: NodePath = ()) -> GradedNode:
    """Build the graded tree: a node whose path is in `grades` keeps its grade (a cut
    subtree's children are not listed); any other node scores the weighted mean of its
    children (0 when all their weights are 0) and is valid only if all of them are."""
    fields = {
        k: getattr(root, k) for k in ("id", "requirements", "weight", "task_category", "finegrained_task_category")
    }
    if path in grades:
        return GradedNode(**fields, **grades[path].model_dump(), subtree=not root.is_leaf)
    if root.is_leaf:
        raise KeyError(f"leaf {root.id!r} (at {path_label(path)}) has no grade")
    children = [aggregate(child, grades, (*path, i)) for i, child in enumerate(root.sub_tasks)]
    return GradedNode(
        **fields,
        score=weighted_mean([(c.weight, c.score) for c in children]),
        valid=all(c.valid for c in children),
        sub_tasks=children,
        prompt_tokens=sum(c.prompt_tokens for c in children),
        completion_tokens=sum(c.completion_tokens for c in children),
        cost=sum(c.cost for c in children),
    )


def weighted_mean(pairs: list[tuple[float, float]]) -> float:
    """PaperBench's node score from its children's (weight, score): 0 when all weights are 0."""
    total = sum(weight for weight, _ in pairs)
    return sum(weight * score for weight, score in pairs) / total if total > 0 else 0.0
