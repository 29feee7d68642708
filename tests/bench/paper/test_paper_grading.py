"""End to end: grade the reference reproductions (high), empty and broken submissions (near zero).

Check leaves are decided from the files the real reproduction produced; every other leaf
goes to a scripted model judge, whose script holds exactly as many answers as leaves need
a model (one answer too few or too many calls would show up as invalid leaves).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from bench.paper import rubric
from bench.paper.graded_tree import load_graded, rescore
from bench.paper.grading import grade_submission

ROOT = Path(__file__).parents[3]
PAPERS = ROOT / "bench" / "papers"
REFERENCES = Path(__file__).parents[2] / "reference_papers"


def _script(tmp_path: Path, score: int, count: int, name: str = "judge.yaml") -> str:
    answer = {
        "expectations": "what the paper specifies",
        "reality": "what the files show",
        "score": score,
        "explanation": "scripted",
    }
    reply = {"content": "```json\n" + json.dumps(answer) + "\n```", "prompt_tokens": 1000, "completion_tokens": 50}
    path = tmp_path / name
    path.write_text(yaml.safe_dump([reply] * count))
    return f"scripted:{path}"


def _leaves(paper: str, code_dev: bool = False) -> list[rubric.RubricNode]:
    root = rubric.load(PAPERS / paper / "rubric.json").root
    return (rubric.code_dev_view(root) if code_dev else root).leaves()


def _copy_reference(paper: str, tmp_path: Path) -> Path:
    dest = tmp_path / "submission"
    shutil.copytree(REFERENCES / paper, dest, ignore=shutil.ignore_patterns("results", "__pycache__"))
    return dest


def test_reference_label_smoothing_scores_high(tmp_path: Path) -> None:
    paper = "label-smoothing-calibration"
    model_leaves = [leaf for leaf in _leaves(paper) if leaf.check is None]
    submission = _copy_reference(paper, tmp_path)
    result = grade_submission(submission, PAPERS / paper, _script(tmp_path, 1, len(model_leaves)), concurrency=4)
    assert result.reproduction is not None and result.reproduction.returncode == 0
    assert result.reproduction.created == ["results/metrics.json", "results/table.md"]
    checks = [n for n in result.tree.walk() if n.method == "check"]
    assert len(checks) == sum(leaf.check is not None for leaf in _leaves(paper))
    assert all(n.score == 1 for n in checks), [n.explanation for n in checks if n.score < 1]
    assert result.valid and result.leaves_invalid == 0
    assert result.score >= 0.95
    assert result.prompt_tokens == 1000 * len(model_leaves)
    saved = json.loads((submission / "grade.json").read_text())
    assert saved["score"] == pytest.approx(result.score) and saved["sub_tasks"]
    assert rescore(load_graded(submission / "grade.json")) == (pytest.approx(result.score), [])
    summary = json.loads((submission / "grade_summary.json").read_text())
    assert summary["score"] == pytest.approx(result.score) and summary["reproduction_problem"] is None
    assert "eps=0.2 seed=1" in (submission / "grade_reproduce.log").read_text()
    assert not (submission / "results").exists()  # reproduction ran on a copy


def test_reference_knn_scaling_scores_high_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from aiscientist.cli.app import main

    paper = "knn-scaling"
    model_leaves = [leaf for leaf in _leaves(paper) if leaf.check is None]
    out = tmp_path / "out"
    monkeypatch.setenv("COLUMNS", "160")
    argv = [
        "grade",
        str(REFERENCES / paper),
        "--paper",
        str(PAPERS / paper),
        "--judge-model",
        _script(tmp_path, 1, len(model_leaves)),
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "score 1.000 (valid)" in printed
    assert "The results of Table 1 are reproduced" in printed and "[check]" in printed
    saved = json.loads((out / "grade_summary.json").read_text())
    assert saved["score"] == pytest.approx(1.0) and saved["reproduction"]["created"] == [
        "results/accuracy.json",
        "results/table.md",
    ]
    assert not (REFERENCES / paper / "results").exists() and not (REFERENCES / paper / "grade.json").exists()


PAPERBENCH_KEYS = [
    "id",
    "requirements",
    "weight",
    "score",
    "valid_score",
    "task_category",
    "explanation",
    "judge_metadata",
    "sub_tasks",
]


def _graded_nodes(node: dict) -> list[dict]:
    return [node, *(n for child in node["sub_tasks"] for n in _graded_nodes(child))]


@pytest.mark.parametrize("paper", ["label-smoothing-calibration", "knn-scaling"])
def test_submission_without_reproduce_sh_is_graded_and_says_why(tmp_path: Path, paper: str) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "notes.md").write_text("I ran out of time before writing reproduce.sh.\n")
    code_leaves = _leaves(paper, code_dev=True)
    result = grade_submission(sub, PAPERS / paper, _script(tmp_path, 0, len(code_leaves)), out=tmp_path / "out")
    why = "no reproduction ran: the submission has no reproduce.sh at its root"
    assert result.score == 0 and result.valid and result.reproduction_problem == why
    assert result.prompt_tokens == 1000 * len(code_leaves)  # only Code Development leaves reach the model
    tree = json.loads((tmp_path / "out" / "grade.json").read_text())
    nodes = _graded_nodes(tree)
    assert all(list(node) == PAPERBENCH_KEYS for node in nodes)
    leaves = [n for n in nodes if not n["sub_tasks"]]
    assert all(why in n["explanation"] for n in leaves if n["task_category"] != "Code Development")
    assert all(
        "reproduc" not in n["explanation"] and n["judge_metadata"]["method"] == "judge"
        for n in leaves
        if n["task_category"] == "Code Development"
    )
    assert json.loads((tmp_path / "out" / "grade_summary.json").read_text())["reproduction_problem"] == why


def test_timed_out_reproduction_is_named_in_every_affected_leaf(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "knn.py").write_text("print('k-NN')\n")
    (sub / "reproduce.sh").write_text("sleep 30\n")
    result = grade_submission(sub, PAPERS / "knn-scaling", "offline", out=tmp_path / "out", timeout_s=1)
    why = "the reproduction timed out after 1s"
    assert result.reproduction_problem == why and result.reproduction.timed_out
    leaves = [n for n in result.tree.walk() if not n.sub_tasks]
    assert all(why in n.explanation for n in leaves if n.task_category != "Code Development")
    assert not any(why in n.explanation for n in leaves if n.task_category == "Code Development")
    checks = [n for n in leaves if n.method == "check"]
    assert checks and all(n.explanation.endswith(f"was not produced ({why})") for n in checks)


BROKEN_METRICS = {
    "results": {
        eps: {"accuracy": 0.5, "nll": 2.0, "ece": 0.3, "confidence": 0.9} for eps in ("0", "0.05", "0.1", "0.2")
    }
}


def test_broken_submission_scores_near_zero(tmp_path: Path) -> None:
    """A crashing training script that writes placeholder numbers, next to a results
    file shipped with the paper's numbers (which must not count: it was not produced)."""
    paper = "label-smoothing-calibration"
    sub = tmp_path / "broken"
    (sub / "results").mkdir(parents=True)
    shipped = {"results": {"0": {"accuracy": 0.9312, "nll": 0.2407, "ece": 0.0105, "confidence": 0.9226}}}
    (sub / "results" / "metrics.json").write_text(json.dumps(shipped))
    (sub / "README.md").write_text("Label smoothing reproduction (work in progress).\n")
    (sub / "train.py").write_text(
        "import json, os\nos.makedirs('results', exist_ok=True)\n"
        f"json.dump({BROKEN_METRICS!r}, open('results/metrics.json', 'w'))\n"
        "raise RuntimeError('model diverged')\n"
    )
    (sub / "reproduce.sh").write_text("set -e\npython train.py\n")
    leaves = _leaves(paper)
    needs_model = [leaf for leaf in leaves if leaf.check is None]
    result = grade_submission(sub, PAPERS / paper, _script(tmp_path, 0, len(needs_model)), out=tmp_path / "out")
    assert result.reproduction is not None and result.reproduction.returncode == 1
    assert result.reproduction.changed == ["results/metrics.json"] and result.reproduction.created == []
    assert result.valid, [n.explanation for n in result.tree.walk() if not n.valid]
    by_req = {n.requirements: n for n in result.tree.walk()}
    assert by_req["Running reproduce.sh produces results/metrics.json"].score == 1
    assert by_req["ECE with epsilon = 0.1 is 0.132 +/- 0.03"].score == 0
    assert 0 < result.score < 0.1


def test_code_dev_mode_grades_only_code_and_skips_reproduction(tmp_path: Path) -> None:
    paper = "label-smoothing-calibration"
    code_leaves = _leaves(paper, code_dev=True)
    result = grade_submission(
        REFERENCES / paper, PAPERS / paper, _script(tmp_path, 1, len(code_leaves)), code_dev=True, out=tmp_path
    )
    assert result.reproduction is None and result.code_dev
    assert {n.task_category for n in result.tree.walk() if not n.sub_tasks} == {"Code Development"}
    assert result.leaves_graded == len(code_leaves) and result.score == 1 and result.valid


def test_cli_offline_judge_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aiscientist.cli.app import main

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["grade", str(empty), "--paper", str(PAPERS / "knn-scaling")]) == 2
    assert "the submission folder is empty" in capsys.readouterr().err
    assert main(["grade", str(PAPERS / "knn-scaling" / "paper.md"), "--paper", str(PAPERS / "knn-scaling")]) == 2
    assert "paper.md: not a directory" in capsys.readouterr().err
    (empty / "train.py").write_text("print('hello')\n")
    assert main(["grade", str(empty), "--paper", str(PAPERS / "knn-scaling")]) == 0
    printed = capsys.readouterr().out
    assert (
        "score 0.000" in printed and "reproduction: no reproduction ran: the submission has no reproduce.sh" in printed
    )
    assert (empty / "grade.json").is_file() and (empty / "grade_summary.json").is_file()
    assert main(["grade", str(empty), "--paper", str(tmp_path / "nope")]) == 2
    assert "paper folder not found" in capsys.readouterr().err
    bad = tmp_path / "bad_paper"
    bad.mkdir()
    (bad / "paper.md").write_text("# A paper\n")
    (bad / "rubric.json").write_text(
        json.dumps(
            {
                "id": "r",
                "requirements": "r",
                "weight": 1,
                "sub_tasks": [{"id": "a", "requirements": "a", "weight": 1, "sub_tasks": []}],
            }
        )
    )
    assert main(["grade", str(empty), "--paper", str(bad)]) == 2
    assert "leaf 'a' (at 0) has no task_category" in capsys.readouterr().err
    assert (
        main(
            [
                "grade",
                str(empty),
                "--paper",
                str(PAPERS / "knn-scaling"),
                "--judge-model",
                "scripted:/no/such/script.yaml",
            ]
        )
        == 2
    )
    assert "no such script file" in capsys.readouterr().err


def test_grade_task_finds_the_paper_folder_from_the_task(tmp_path: Path) -> None:
    from aiscientist.task import load_task
    from bench.paper.grading import grade_task

    task = load_task(PAPERS / "knn-scaling" / "task.yaml")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "README.md").write_text("nothing yet\n")
    result = grade_task(task, sub, "offline", out=tmp_path / "out")
    assert result.paper == "knn-scaling" and result.score == 0 and (tmp_path / "out" / "grade.json").is_file()


def test_depth_limited_code_dev_grading(tmp_path: Path) -> None:
    paper = "label-smoothing-calibration"
    view = rubric.code_dev_view(rubric.load(PAPERS / paper / "rubric.json").root)
    answer = {"expectations": "e", "reality": "r", "score": 0.5, "explanation": "half of the group"}
    script = tmp_path / "judge.yaml"
    script.write_text(yaml.safe_dump([json.dumps(answer)] * len(view.sub_tasks)))
    result = grade_submission(
        REFERENCES / paper, PAPERS / paper, f"scripted:{script}", code_dev=True, out=tmp_path, max_depth=1
    )
    assert result.leaves_graded == len(view.sub_tasks) == 3
    assert all(child.subtree and child.score == 0.5 for child in result.tree.sub_tasks)
    assert result.score == pytest.approx(0.5) and result.valid and result.max_depth == 1
