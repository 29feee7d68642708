"""The generic search-tree record, `state/tree.json`: one node per proposal of a tree or
population agent (AIDE, AIRA-MCTS, OpenEvolve, AI-Scientist-v2, ...), each with the node
it started from. The run page draws it for any agent; every such agent writes it through
`write_tree`, so nobody reads an agent's own state by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aiscientist.records.paths import RunPaths, write_atomic

Status = Literal["pending", "good", "buggy"]


class TreeNode(BaseModel):
    """One proposal of a tree or population agent."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    node: int = Field(ge=0)
    """The node's id."""
    parent: int | None = None
    """The node it started from; None: from the baseline (a root)."""
    operator: str
    """How it was made: draft, improve, debug, mutate, ..."""
    step: int | None = None
    """The counted step that measured it (None: not run yet)."""
    metric: float | None = None
    """The metric that step read."""
    status: Status = "pending"
    """pending, good (measured) or buggy (failed)."""
    group: str | None = None
    """An island, a stage, a phase: how the agent partitions its nodes."""


class Tree(BaseModel):
    """`state/tree.json` (`RunPaths.tree`)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    agent: str
    """The agent whose nodes these are."""
    nodes: list[TreeNode] = []
    """Every node, in the order made."""

    def by_id(self) -> dict[int, TreeNode]:
        return {n.node: n for n in self.nodes}

    def step_parents(self) -> dict[int, tuple[int | None, TreeNode]]:
        """step -> (the step of its parent node, or None for a root; its node)."""
        ids = self.by_id()
        out: dict[int, tuple[int | None, TreeNode]] = {}
        for n in self.nodes:
            if n.step is not None:
                parent = ids.get(n.parent) if n.parent is not None else None
                out[n.step] = (parent.step if parent is not None else None, n)
        return out


def write_tree(root: Path, tree: Tree) -> None:
    path = RunPaths(root).tree
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, tree.model_dump_json(indent=1))


def read_tree(root: Path) -> Tree | None:
    """The run's tree, or None when the agent keeps none (or it cannot be read)."""
    try:
        return Tree.model_validate(json.loads(RunPaths(root).tree.read_text()))
    except (OSError, ValueError):
        return None
