"""The judge-agreement harness on a constructed JudgeEval case, graded by a scripted judge."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml

from aiscientist.cli.app import main
from bench.paper.judge_eval import agreement, run_judge_eval

# (id, category, weight, expected grade, the scripted judge's answer); ids repeat on purpose.
LEAVES = [
    ("dup", "Code Development", 1, 1, 1),
    ("c2", "Code Development", 2, 0, 1),
    ("e1", "Code Execution", 1, 1, 0),
    ("r1", "Result Analysis", 1, 0, 0),
    ("dup", "Result Analysis", 1, 1, 1),
    ("r3", "Result Analysis", 1, 0, None),  # the judge's answer is unusable: an invalid leaf
]


def _node(node_id: str, score: float, weight: float, category: str | None, children: list) -> dict:
    return {
        "id": node_id,
        "requirements": f"requirement {node_id}",
        "weight": weight,
        "score": score,
        "valid_score": True,
        "task_category": category,
        "explanation": "human grade",
        "judge_metadata": None,
        "sub_tasks": children,
    }


def _case(root: Path) -> Path:
    """judge_eval/toy/0/{grading/expected_result.json, submission.tar} and papers/toy/paper.md."""
    leaves = [_node(i, float(expected), w, cat, []) for i, cat, w, expected, _ in LEAVES]
    total = sum(w for _, _, w, _, _ in LEAVES)
    expected_root = sum(w * e for _, _, w, e, _ in LEAVES) / total  # 3/7
    tree = _node("root", expected_root, 1, None, [_node("group", expected_root, 1, None, leaves)])
    case = root / "judge_eval" / "toy" / "0"
    (case / "grading").mkdir(parents=True)
    (case / "grading" / "expected_result.json").write_text(json.dumps(tree, indent=4))
    sub = root / "build" / "submission"
    sub.mkdir(parents=True)
    (sub / "train.py").write_text("print('training')\n")
    (sub / "reproduce.sh").write_text("python train.py > results.txt\n")
    (sub / "reproduce.log").write_text("training\n")
    (sub / "results.txt").write_text("accuracy 0.91\n")
    with tarfile.open(case / "submission.tar", "w") as tar:
        tar.add(sub, arcname="submission")
    (root / "papers" / "toy").mkdir(parents=True)
    (root / "papers" / "toy" / "paper.md").write_text("# Toy paper\n\nTrain a model; report accuracy.\n")
    return root / "judge_eval"


def _script(tmp_path: Path) -> str:
    answer = lambda score: json.dumps({"expectations": "e", "reality": "r", "score": score, "explanation": "scripted"})  # noqa: E731
    replies = [
        {"content": answer(judge) if judge is not None else "no idea", "prompt_tokens": 10, "completion_tokens": 2}
        for *_, judge in LEAVES
    ]
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump(replies))
    return f"scripted:{path}"


def test_agreement_figures_are_hand_computed(tmp_path: Path) -> None:
    result = run_judge_eval(_case(tmp_path), _script(tmp_path), concurrency=1)  # one at a time: answers in leaf order
    case = result.cases[0]
    assert case.case == "toy/0" and case.invalid == 1 and case.prompt_tokens == 60
    # judge root: (1·1 + 2·1 + 0 + 0 + 1·1 + 0) / 7 against the expected 3/7
    assert case.expected_score == pytest.approx(3 / 7) and case.judge_score == pytest.approx(4 / 7)
    assert case.score_difference == pytest.approx(1 / 7)
    overall = case.agreement["Overall"]  # expected 1 0 1 0 1, judged 1 1 0 0 1 (r3 left out)
    assert overall.leaves == 5 and overall.expected_pass == 3 and overall.predicted_pass == 3
    assert overall.accuracy == pytest.approx(3 / 5)
    # pass: precision 2/3, recall 2/3; fail: precision 1/2, recall 1/2; macro means
    assert overall.precision == pytest.approx(7 / 12) and overall.recall == pytest.approx(7 / 12)
    assert overall.f1 == pytest.approx((2 / 3 + 1 / 2) / 2)
    code = case.agreement["Code Development"]  # expected 1 0, judged 1 1
    assert (
        code.accuracy == 0.5
        and code.precision == pytest.approx(1 / 4)
        and code.recall == 0.5
        and code.f1 == pytest.approx(1 / 3)
    )
    assert case.agreement["Code Execution"].accuracy == 0 and case.agreement["Code Execution"].f1 == 0
    results = case.agreement["Result Analysis"]
    assert results.leaves == 2 and results.accuracy == 1 and results.f1 == 1
    assert result.agreement == case.agreement and result.mean_abs_score_difference == pytest.approx(1 / 7)


def test_agreement_of_nothing_is_zero() -> None:
    assert agreement([], []).leaves == 0 and agreement([1, 1], [1, 1]).f1 == 1


def test_cli_writes_the_report_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    cases = _case(tmp_path)
    out = tmp_path / "out"
    assert (
        main(
            [
                "grade",
                "--judge-eval",
                str(cases),
                "--judge-model",
                _script(tmp_path),
                "--concurrency",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "toy/0" in printed and "0.429 / 0.571 (+0.143)" in printed and "5 (+1 invalid)" in printed
    saved = json.loads((out / "judge_eval.json").read_text())
    assert saved["agreement"]["Overall"]["accuracy"] == pytest.approx(0.6)
    assert main(["rubric", "score", str(out / "graded" / "toy" / "0" / "grade.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == pytest.approx(4 / 7)
    assert main(["grade", "--judge-eval", str(tmp_path / "nope")]) == 2
    assert "judge-eval folder not found" in capsys.readouterr().err
    assert main(["grade", "sub", "--judge-eval", str(cases)]) == 2
    assert "--judge-eval takes no SUBMISSION" in capsys.readouterr().err
    (cases / "toy" / "0" / "submission.tar").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n"
    )
    assert main(["grade", "--judge-eval", str(cases)]) == 2
    assert "a Git LFS pointer, not the archive" in capsys.readouterr().err
    (tmp_path / "papers" / "toy" / "paper.md").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n"
    )
    assert main(["grade", "--judge-eval", str(cases)]) == 2
    assert "paper.md: a Git LFS pointer, not the file" in capsys.readouterr().err
