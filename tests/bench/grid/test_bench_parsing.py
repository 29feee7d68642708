"""Pure pieces of the baselines: AIDE's answer parsing and journal policy inputs,
The AI Scientist's idea lists, option parsing of the CLI."""

from __future__ import annotations

import pytest

from bench.agents.ai_scientist import parse_ideas
from bench.agents.aide import MAX_DEBUG_DEPTH, AideJournal, AideNode, extract_code
from bench.cli.bench import parse_options


def test_extract_code_takes_plan_and_longest_block():
    plan, code = extract_code("Use a cosine schedule.\n\n```python\nx = 1\n```\nand\n```\nLR = 0.1\nEPOCHS = 3\n```")
    assert plan == "Use a cosine schedule." and code == "LR = 0.1\nEPOCHS = 3\n"
    assert extract_code("no code here") == ("no code here", None)


def test_extract_code_prefers_code_that_compiles_and_reads_a_block_cut_short():
    answer = "Plan.\n```python\nimport json\nLR = 0.1\n```\nOr:\n```python\ndef broken(:\n    return 1 + 2 + 3 + 4\n```"
    assert extract_code(answer, python=True) == ("Plan.", "import json\nLR = 0.1\n")
    assert extract_code(answer)[1] == "def broken(:\n    return 1 + 2 + 3 + 4\n"  # not Python: the longest
    assert extract_code("Cut at the limit.\n```python\nx = 1\ny = 2") == ("Cut at the limit.", "x = 1\ny = 2")


def node(
    i: int, parent: int | None, buggy: bool, metric: float | None = None, depth: int = 0, stage: str = "draft"
) -> AideNode:
    return AideNode(id=i, parent=parent, stage=stage, plan="p", code="c", buggy=buggy, metric=metric, debug_depth=depth)


def test_journal_best_and_debuggable_leaves():
    journal = AideJournal(
        target="train.py",
        nodes=[
            node(0, None, False, 0.5),
            node(1, None, True),  # buggy leaf
            node(2, None, True),  # buggy, but it has a child: not a leaf
            node(3, 2, True, depth=1, stage="debug"),
            node(4, None, True, depth=MAX_DEBUG_DEPTH, stage="debug"),  # too deep
            node(5, 0, False, 0.3, stage="improve"),
        ],
    )
    assert journal.best("max").id == 0 and journal.best("min").id == 5
    assert [n.id for n in journal.debuggable()] == [1, 3]


def test_parse_ideas_accepts_a_json_block_and_rejects_junk():
    text = 'Here:\n```json\n[{"name": "mixup", "title": "Mixup", "experiment": "add mixup"}, {"oops": 1}]\n```'
    ideas = parse_ideas(text)
    assert [(i.name, i.title) for i in ideas] == [("mixup", "Mixup")]
    assert parse_ideas("```json\n{not json\n```") == [] and parse_ideas("nothing") == []


def test_cli_options():
    assert parse_options(["external.command=my agent --x=1", "aide.target_file=a.py"]) == {
        "external": {"command": "my agent --x=1"},
        "aide": {"target_file": "a.py"},
    }
    with pytest.raises(ValueError, match="AGENT.KEY=VALUE"):
        parse_options(["command=x"])


def test_bench_run_rejects_bad_input_before_any_work(tmp_path, capsys):
    from aiscientist.cli.app import main

    def err() -> str:
        return " ".join(capsys.readouterr().err.split())  # rich wraps long lines

    tiny = "tests/fixtures/tiny/task.yaml"
    assert main(["bench", "run", "--agents", "nope", "--tasks", tiny, "--out", str(tmp_path / "a")]) == 2
    assert "unknown agent 'nope'" in err()
    assert main(["bench", "run", "--agents", "aide", "--tasks", tiny, "--out", str(tmp_path / "b")]) == 2
    assert "--model is required for aide" in err()
    assert main(["bench", "run", "--agents", "hpsearch", "--tasks", "no-such-task", "--out", str(tmp_path / "c")]) == 2
    assert "no-such-task: tasks: not a task name" in err()
    assert (
        main(
            [
                "bench",
                "run",
                "--agents",
                "aide",
                "--model",
                "offline",
                "--tasks",
                "knn-scaling",
                "--out",
                str(tmp_path / "d"),
            ]
        )
        == 2
    )
    assert "cannot work on a paper task" in err()
    assert main(["bench", "report", str(tmp_path)]) == 2
    assert not any((tmp_path / d).exists() for d in "abcd")


def test_agents_help_names_every_agent():
    import argparse

    from bench.agents import agent_names
    from bench.cli.bench import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    help_text = parser._subparsers._group_actions[0].choices["run"].format_help()
    flat = " ".join(help_text.split()).replace("- ", "-")  # argparse may wrap a line after a hyphen
    assert all(name in flat for name in agent_names())
