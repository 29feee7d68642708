"""Rubric format: PaperBench files load and round-trip, views, validation, scoring, checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from bench.paper import rubric
from bench.paper.rubric import LeafGrade, RubricError, aggregate, code_dev_view, graded_targets

FIXTURES = Path(__file__).parents[2] / "fixtures" / "paper"
PAPERS = Path(__file__).parents[3] / "bench" / "papers"
RUBRIC_FILES = [
    FIXTURES / "paperbench_rubric.json",
    FIXTURES / "paperbench_rubric_legacy.json",
    *sorted(PAPERS.glob("*/rubric.json")),
]


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rubric_files_round_trip_byte_for_byte(path: Path, tmp_path: Path) -> None:
    original = path.read_bytes()
    loaded = rubric.load(path)
    out = tmp_path / "rubric.json"
    loaded.dump(out)
    assert out.read_bytes() == original
    assert rubric.loads(loaded.dumps()).dumps().encode() == original


def test_paperbench_fixture_structure() -> None:
    root = rubric.load(FIXTURES / "paperbench_rubric.json").root
    depth = max(len(path) for path in _paths(root))
    assert depth >= 4  # root, section, subsection, leaf
    assert {leaf.task_category for leaf in root.leaves()} == set(rubric.TASK_CATEGORIES)
    assert root.find("a1c2e3f4-0002-4bbb-8ccc-000000000003").finegrained_task_category == "Method Implementation"
    legacy = rubric.load(FIXTURES / "paperbench_rubric_legacy.json").root
    assert legacy.find("b0000000-0000-4000-8000-000000000002").model_extra == {"result": "Pass"}
    assert legacy.find("b0000000-0000-4000-8000-000000000003").weight == 1.5


def _by_path(root: rubric.RubricNode, by_id: dict[str, LeafGrade]) -> dict[rubric.NodePath, LeafGrade]:
    return {path: by_id[node.id] for path, node in root.walk_paths() if node.id in by_id}


def _paths(node: rubric.RubricNode, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    here = (*prefix, node.id)
    return [here] if node.is_leaf else [p for child in node.sub_tasks for p in _paths(child, here)]


def test_code_dev_view_keeps_only_code_development_and_renormalises() -> None:
    root = rubric.load(FIXTURES / "paperbench_rubric.json").root
    view = code_dev_view(root)
    assert view is not None
    leaves = view.leaves()
    assert leaves and all(leaf.task_category == "Code Development" for leaf in leaves)
    assert len(leaves) == sum(leaf.task_category == "Code Development" for leaf in root.leaves())
    # The results section holds no Code Development leaf, so it disappears.
    assert [child.requirements for child in view.sub_tasks] == [
        "The datasets and noise model are set up",
        "Mixup training is implemented",
    ]
    # All code leaves passing gives a full score in the view; weights renormalise over what remains.
    grades = {leaf.id: LeafGrade(score=1) for leaf in leaves}
    assert aggregate(view, _by_path(view, grades)).score == pytest.approx(1.0)
    # Only the ResNet leaf (weight 1 of 3 inside "Mixup", which has weight 3 of 4) passes.
    grades = {leaf.id: LeafGrade(score=0) for leaf in leaves}
    grades["a1c2e3f4-0002-4bbb-8ccc-000000000005"] = LeafGrade(score=1)
    assert aggregate(view, _by_path(view, grades)).score == pytest.approx(3 / 4 * 1 / 3)
    view_dump = rubric.Rubric(root=view).dumps()
    assert "Result Analysis" not in view_dump and "Code Execution" not in view_dump


def test_code_dev_view_of_a_rubric_without_code_is_none() -> None:
    root = rubric.parse_node(_tree([_leaf("a", cat="Result Analysis")]))
    assert code_dev_view(root) is None


# ---- validation ---------------------------------------------------------------------------


def _leaf(node_id: str, weight: float = 1, cat: str | None = "Code Development", **extra) -> dict:
    return {
        "id": node_id,
        "requirements": f"req {node_id}",
        "weight": weight,
        "sub_tasks": [],
        "task_category": cat,
        **extra,
    }


def _tree(children: list[dict], node_id: str = "root", weight: float = 1) -> dict:
    return {
        "id": node_id,
        "requirements": f"req {node_id}",
        "weight": weight,
        "sub_tasks": children,
        "task_category": None,
    }


GOOD_CHECK = {"type": "json_metric", "file": "r.json", "path": "a.b", "value": 1.0, "tolerance": 0.1}


@pytest.mark.parametrize(
    "data, message",
    [
        (_tree([_leaf("a", cat=None)]), "leaf 'a' (at 0) has no task_category"),
        (
            {**_tree([_leaf("a")]), "task_category": "Code Development"},
            "internal node 'root' (at root) has task_category set",
        ),
        (
            {**_tree([_leaf("a")]), "finegrained_task_category": "Method Implementation"},
            "internal node 'root' (at root) has finegrained_task_category set",
        ),
        (_tree([_leaf("a", weight=-1)]), "node 'a' (at 0): weight: Input should be greater than or equal to 0"),
        (_tree([]), "empty rubric: the root node has no sub_tasks"),
        ({}, "empty rubric: no root node"),
        (_tree([_leaf("a", cat="Coding")]), "node 'a' (at 0): task_category"),
        (_tree([_leaf("a", finegrained_task_category="Vibes")]), "node 'a' (at 0): finegrained_task_category"),
        (_tree([_leaf("a", check=GOOD_CHECK)]), "cannot sit on a Code Development leaf"),
        (_tree([_leaf("a", cat="Result Analysis", check={**GOOD_CHECK, "type": "nope"})]), "node 'a' (at 0): check"),
        (
            _tree([_leaf("a", cat="Result Analysis", check={"type": "text_match", "file": "x", "pattern": "("})]),
            "invalid regular expression",
        ),
        (
            {**_tree([_leaf("a", check=GOOD_CHECK, cat="Result Analysis")]), "check": GOOD_CHECK},
            "internal node 'root' (at root) has check set",
        ),
        ({"id": "root", "requirements": "r", "weight": 1, "sub_tasks": {"a": 1}}, "sub_tasks must be a list"),
        (
            _tree([{"requirements": "no id", "weight": 1, "sub_tasks": [], "task_category": "Code Development"}]),
            "id: Field required",
        ),
        ([1, 2], "expected a JSON object"),
        (
            _tree([{"id": "a", "requirements": "a", "weight": 1, "task_category": "Code Development"}]),
            "node 'a' (at 0): sub_tasks must be a list ([] on a leaf)",
        ),
    ],
)
def test_bad_rubrics_are_rejected_with_a_clear_error(data, message: str) -> None:
    with pytest.raises(RubricError) as err:
        rubric.loads(json.dumps(data), "bad.json")
    assert message in str(err.value)
    assert str(err.value).startswith("bad.json: ")


def test_duplicate_ids_load_round_trip_and_score_by_path() -> None:
    """Real PaperBench rubrics repeat ids, even between siblings; nodes are told apart by path."""
    data = _tree([_leaf("dup"), _tree([_leaf("dup", weight=3), _leaf("dup")], node_id="dup")])
    text = json.dumps(data, indent=4) + "\n"
    loaded = rubric.loads(text)
    assert loaded.dumps() == text
    assert [path for path, node in loaded.root.walk_paths() if node.id == "dup"] == [(0,), (1,), (1, 0), (1, 1)]
    grades = {(0,): LeafGrade(score=0), (1, 0): LeafGrade(score=1), (1, 1): LeafGrade(score=0)}
    tree = aggregate(loaded.root, grades)
    assert [n.score for n in tree.sub_tasks] == [0, 0.75]
    assert tree.score == pytest.approx(0.375)


def test_unreadable_rubric_files(tmp_path: Path) -> None:
    with pytest.raises(RubricError, match="rubric file not found"):
        rubric.load(tmp_path / "missing.json")
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(RubricError, match="empty rubric file"):
        rubric.load(tmp_path / "empty.json")
    (tmp_path / "broken.json").write_text('{"id": ')
    with pytest.raises(RubricError, match="invalid JSON"):
        rubric.load(tmp_path / "broken.json")


def test_nodes_built_in_code_dump_in_paperbench_key_order() -> None:
    node = rubric.RubricNode(
        id="x",
        requirements="r",
        weight=2,
        task_category="Result Analysis",
        check={"type": "file_exists", "file": "out.txt"},
    )
    assert list(node.to_dict()) == [
        "id",
        "requirements",
        "weight",
        "sub_tasks",
        "task_category",
        "finegrained_task_category",
        "check",
    ]
    assert node.to_dict()["check"] == {"file": "out.txt", "type": "file_exists"}


# ---- scoring ------------------------------------------------------------------------------


def _scoring_tree() -> rubric.RubricNode:
    """root ─ A (w1) ─ a1 (w1), a2 (w3)
    B (w2) ─ B1 (w1) ─ b11 (w1), b12 (w1)
             b2 (w0)
    C (w0) ─ c1 (w1)"""
    return rubric.parse_node(
        _tree(
            [
                _tree([_leaf("a1"), _leaf("a2", weight=3)], node_id="A"),
                _tree(
                    [_tree([_leaf("b11"), _leaf("b12")], node_id="B1"), _leaf("b2", weight=0)], node_id="B", weight=2
                ),
                _tree([_leaf("c1")], node_id="C", weight=0),
            ]
        )
    )


def test_weighted_means_at_every_depth() -> None:
    grades = {
        "a1": LeafGrade(score=1),
        "a2": LeafGrade(score=0),
        "b11": LeafGrade(score=1),
        "b12": LeafGrade(score=0),
        "b2": LeafGrade(score=1),
        "c1": LeafGrade(score=1),
    }
    tree = aggregate(_scoring_tree(), _by_path(_scoring_tree(), grades))
    by_id = {node.id: node for node in tree.walk()}
    assert by_id["A"].score == pytest.approx(0.25)
    assert by_id["B1"].score == pytest.approx(0.5)
    assert by_id["B"].score == pytest.approx(0.5)  # b2 has weight 0: it does not count
    assert by_id["C"].score == pytest.approx(1.0)
    assert tree.score == pytest.approx((1 * 0.25 + 2 * 0.5 + 0 * 1.0) / 3)
    assert tree.valid


def test_all_zero_weights_score_zero() -> None:
    root = rubric.parse_node(_tree([_leaf("a", weight=0), _leaf("b", weight=0)]))
    tree = aggregate(root, {(0,): LeafGrade(score=1), (1,): LeafGrade(score=1)})
    assert tree.score == 0.0


def test_invalid_leaves_score_zero_and_invalidate_their_ancestors_only() -> None:
    grades = {leaf: LeafGrade(score=1) for leaf in ("a1", "a2", "b11", "b12", "b2", "c1")}
    grades["b12"] = LeafGrade(score=0, valid=False, method="error", explanation="grading error: boom", prompt_tokens=7)
    tree = aggregate(_scoring_tree(), _by_path(_scoring_tree(), grades))
    by_id = {node.id: node for node in tree.walk()}
    assert not by_id["b12"].valid and not by_id["B1"].valid and not by_id["B"].valid and not tree.valid
    assert by_id["A"].valid and by_id["C"].valid
    assert by_id["B1"].score == pytest.approx(0.5)
    assert tree.score == pytest.approx((1 * 1 + 2 * 0.5) / 3)
    assert tree.prompt_tokens == 7


def test_depth_limited_subtree_is_graded_as_a_whole() -> None:
    root = _scoring_tree()
    targets = graded_targets(root, max_depth=1)
    assert [(path, node.id, subtree) for path, node, subtree in targets] == [
        ((0,), "A", True),
        ((1,), "B", True),
        ((2,), "C", True),
    ]
    targets = graded_targets(root, max_depth=2)
    assert [(node.id, subtree) for _, node, subtree in targets] == [
        ("a1", False),
        ("a2", False),
        ("B1", True),
        ("b2", False),
        ("c1", False),
    ]
    grades = {
        "a1": LeafGrade(score=1),
        "a2": LeafGrade(score=1),
        "B1": LeafGrade(score=0.3),
        "b2": LeafGrade(score=0),
        "c1": LeafGrade(score=0),
    }
    tree = aggregate(root, _by_path(root, grades))
    by_id = {node.id: node for node in tree.walk()}
    assert by_id["B1"].subtree and by_id["B1"].sub_tasks == []
    assert by_id["B"].score == pytest.approx(0.3)
    assert tree.score == pytest.approx((1 * 1.0 + 2 * 0.3) / 3)
    with pytest.raises(KeyError):
        aggregate(root, _by_path(root, {k: v for k, v in grades.items() if k != "c1"}))


def test_paper_task_rubrics_have_what_the_issue_asks() -> None:
    for path in sorted(PAPERS.glob("*/rubric.json")):
        root = rubric.load(path).root
        leaves = root.leaves()
        assert 20 <= len(leaves) <= 60, path
        assert {leaf.task_category for leaf in leaves} == set(rubric.TASK_CATEGORIES), path
        assert max(len(p) for p in _paths(root)) >= 4, path
        assert any(leaf.check is not None for leaf in leaves), path
        assert (path.parent / "paper.md").is_file() and (path.parent / "addendum.md").is_file()


def test_rubric_is_not_mutated_by_views() -> None:
    data = json.loads((FIXTURES / "paperbench_rubric.json").read_text())
    before = copy.deepcopy(data)
    loaded = rubric.loads(json.dumps(data))
    code_dev_view(loaded.root)
    assert json.loads(loaded.dumps()) == before
