"""`rubric check` and `rubric score`, and PaperBench's graded-tree format in and out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiscientist.cli.app import main
from bench.paper import rubric
from bench.paper.graded_tree import load_graded, parse_graded, rescore, to_paperbench
from bench.paper.rubric import LeafGrade, RubricError, aggregate


def _graded(
    node_id: str, score: float, weight: float = 1, children: list | None = None, category: str | None = None, **extra
) -> dict:
    return {
        "id": node_id,
        "requirements": f"req {node_id}",
        "weight": weight,
        "score": score,
        "valid_score": True,
        "task_category": category if children is None else None,
        "explanation": "e",
        "judge_metadata": None,
        "sub_tasks": children or [],
        **extra,
    }


def _tree(stored_a: float = 0.25) -> dict:
    """root ─ A (w1) ─ x (w1) = 1, x (w3) = 0      A = 1/4
            └ B (w2) ─ x (w1) = 1, y (w0) = 0       B = 1
    root = (1 * 1/4 + 2 * 1) / 3 = 0.75; ids repeat, as in real PaperBench trees."""
    a = _graded(
        "A",
        stored_a,
        1,
        [
            _graded("x", 1, 1, category="Code Development"),
            _graded("x", 0, 3, category="Code Execution", judge_metadata=""),
        ],
    )
    b = _graded(
        "B", 1, 2, [_graded("x", 1, 1, category="Result Analysis"), _graded("y", 0, 0, category="Result Analysis")]
    )
    return _graded("root", 0.75, 1, [a, b])


def _write(tmp_path: Path, data: dict, name: str = "graded.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=4))
    return str(path)


def test_score_reaggregates_a_constructed_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rubric", "score", _write(tmp_path, _tree()), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"score": pytest.approx(0.75), "mismatches": []}
    assert main(["rubric", "score", _write(tmp_path, _tree())]) == 0
    assert "score 0.750000 from 4 leaves (0 invalid); 0 node(s) differ" in capsys.readouterr().out


def test_score_lists_nodes_whose_stored_score_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _tree(stored_a=0.5))
    assert main(["rubric", "score", path, "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "score": pytest.approx(0.75),
        "mismatches": [{"path": "0", "id": "A", "stored": 0.5, "computed": 0.25}],
    }
    assert main(["rubric", "score", path]) == 1
    assert "'A' (at 0): stored 0.500000, re-scored 0.250000" in capsys.readouterr().out


def test_score_reads_a_paperbench_judge_output(tmp_path: Path) -> None:
    wrapped = {"judge_type": "simple", "score": 0.75, "num_leaf_nodes": 4, "graded_task_tree": _tree()}
    assert rescore(load_graded(_write(tmp_path, wrapped)))[0] == pytest.approx(0.75)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda t: t["sub_tasks"][1]["sub_tasks"][0].pop("valid_score"),
            "node 'x' (at 1.0): valid_score: Field required",
        ),
        (
            lambda t: t["sub_tasks"][0].update(score=1.5),
            "node 'A' (at 0): score: Input should be less than or equal to 1",
        ),
        (lambda t: t["sub_tasks"][1].update(sub_tasks="none"), "node 'B' (at 1): sub_tasks must be a list"),
    ],
)
def test_bad_graded_trees_exit_2_naming_the_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change, message: str
) -> None:
    tree = _tree()
    change(tree)
    assert main(["rubric", "score", _write(tmp_path, tree)]) == 2
    assert message in capsys.readouterr().err


def test_our_graded_tree_is_paperbench_format_and_rescores_to_its_root() -> None:
    root = rubric.parse_node(
        {
            "id": "r",
            "requirements": "r",
            "weight": 1,
            "task_category": None,
            "sub_tasks": [
                {
                    "id": "d",
                    "requirements": "code",
                    "weight": 2,
                    "sub_tasks": [],
                    "task_category": "Code Development",
                    "finegrained_task_category": "Method Implementation",
                },
                {
                    "id": "d",
                    "requirements": "group",
                    "weight": 1,
                    "task_category": None,
                    "sub_tasks": [
                        {
                            "id": "e",
                            "requirements": "runs",
                            "weight": 1,
                            "sub_tasks": [],
                            "task_category": "Code Execution",
                        }
                    ],
                },
            ],
        }
    )
    grades = {
        (0,): LeafGrade(score=1, judge_metadata={"reality": "seen"}),
        (1,): LeafGrade(score=0.4, valid=False, explanation="x"),
    }
    tree = to_paperbench(aggregate(root, grades))
    assert tree["score"] == pytest.approx((2 * 1 + 0.4) / 3) and tree["valid_score"] is False
    assert tree["explanation"] == "Aggregated score from sub-tasks." and tree["judge_metadata"] is None
    code, group = tree["sub_tasks"]
    assert code["judge_metadata"] == {
        "method": "judge",
        "reality": "seen",
        "finegrained_task_category": "Method Implementation",
    }
    assert group["task_category"] == "Subtree" and group["sub_tasks"] == [] and group["valid_score"] is False
    parsed = parse_graded(json.loads(json.dumps(tree)))
    assert rescore(parsed) == (pytest.approx(tree["score"]), [])


def _rubric(tmp_path: Path) -> str:
    leaf = lambda i, cat, w=1, **x: {  # noqa: E731
        "id": f"l{i}",
        "requirements": "r",
        "weight": w,
        "sub_tasks": [],
        "task_category": cat,
        **x,
    }  # noqa: E731
    data = {
        "id": "root",
        "requirements": "r",
        "weight": 1,
        "sub_tasks": [
            {
                "id": "g",
                "requirements": "g",
                "weight": 2,
                "sub_tasks": [
                    leaf(1, "Code Development", finegrained_task_category="Method Implementation"),
                    leaf(1, "Code Execution"),
                ],
            },
            {
                "id": "g",
                "requirements": "dead",
                "weight": 1,
                "sub_tasks": [leaf(2, "Result Analysis", 0), leaf(3, "Result Analysis", 0)],
            },
        ],
    }
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps(data, indent=4) + "\n")
    return str(path)


def test_check_summarizes_a_rubric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _rubric(tmp_path)
    assert main(["rubric", "check", path, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["nodes"] == 7 and summary["leaves"] == 4 and summary["depth"] == 2 and summary["duplicate_ids"] == 2
    assert summary["task_categories"] == {"Code Development": 1, "Code Execution": 1, "Result Analysis": 2}
    assert summary["finegrained_categories"] == {"(none)": 3, "Method Implementation": 1}
    assert [(a["path"], a["id"]) for a in summary["anomalies"]] == [("1", "g"), ("1.0", "l2"), ("1.1", "l3")]
    assert "all 2 children have weight 0" in summary["anomalies"][0]["problem"]
    assert main(["rubric", "check", path]) == 0
    printed = capsys.readouterr().out
    assert "7 nodes, 4 leaves, depth 2, 2 repeated ids" in printed and "task categories: Code Development 1" in printed


def test_check_names_the_bad_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(Path(_rubric(tmp_path)).read_text())
    data["sub_tasks"][1]["sub_tasks"][1]["task_category"] = None
    assert main(["rubric", "check", _write(tmp_path, data, "bad.json")]) == 2
    assert "leaf 'l3' (at 1.1) has no task_category" in capsys.readouterr().err
    assert main(["rubric", "check", str(tmp_path / "missing.json")]) == 2
    with pytest.raises(RubricError, match="graded tree file not found"):
        load_graded(tmp_path / "missing.json")
