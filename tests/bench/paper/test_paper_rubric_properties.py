"""Property tests: any valid rubric round-trips; the root score is the share-weighted sum of leaf scores."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.paper import rubric
from bench.paper.rubric import LeafGrade, aggregate

CATEGORIES = st.sampled_from(rubric.TASK_CATEGORIES)
WEIGHTS = st.one_of(st.integers(0, 5), st.floats(0, 5, allow_nan=False).map(lambda w: round(w, 2)))
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)


@st.composite
def trees(draw, depth: int = 0) -> dict:
    node = {"id": "", "requirements": draw(TEXT), "weight": draw(WEIGHTS)}
    if depth < 3 and (depth == 0 or draw(st.booleans())):
        node["sub_tasks"] = draw(st.lists(trees(depth + 1), min_size=1, max_size=3))
        node["task_category"] = None
        node["finegrained_task_category"] = None
    else:
        node["sub_tasks"] = []
        node["task_category"] = draw(CATEGORIES)
        node["finegrained_task_category"] = draw(st.none() | st.sampled_from(rubric.FINEGRAINED_CATEGORIES))
    return node


def _number(node: dict, counter: list[int]) -> dict:
    counter[0] += 1
    node["id"] = f"n{counter[0]}"
    for child in node["sub_tasks"]:
        _number(child, counter)
    return node


def _oracle(node: dict, scores: dict[str, float]) -> float:
    """Sum over leaves of score x product of relative weights on the path."""
    if not node["sub_tasks"]:
        return scores[node["id"]]
    total = sum(c["weight"] for c in node["sub_tasks"])
    return sum(c["weight"] / total * _oracle(c, scores) for c in node["sub_tasks"]) if total else 0.0


@settings(max_examples=60, deadline=None)
@given(trees(), st.integers(0, 2), st.data())
def test_round_trip_and_score(tree: dict, indent: int, data: st.DataObject) -> None:
    tree = _number(tree, [0])
    text = json.dumps(tree, indent=indent or None, ensure_ascii=data.draw(st.booleans())) + "\n"
    loaded = rubric.loads(text)
    assert loaded.dumps() == text
    leaves = loaded.root.leaves()
    scores = {leaf.id: float(data.draw(st.sampled_from([0, 1]))) for leaf in leaves}
    graded = aggregate(
        loaded.root, {path: LeafGrade(score=scores[node.id]) for path, node in loaded.root.walk_paths() if node.is_leaf}
    )
    assert 0 <= graded.score <= 1
    assert math.isclose(graded.score, _oracle(tree, scores), abs_tol=1e-9)
