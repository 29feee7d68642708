"""perf/structure.py: its measures, and the structure goals the project keeps."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("structure", ROOT / "perf" / "structure.py")
structure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(structure)


def test_cycles_are_found_and_a_chain_is_not_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}, "f": {"g"}, "g": {"f"}}
    assert sorted(structure.cycles(graph)) == [["a", "b", "c"], ["f", "g"]]
    assert structure.cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_code_lines_leave_out_docstrings_comments_and_blank_lines():
    source = textwrap.dedent('''
        """Module docstring
        over two lines."""

        # a comment
        def f(x):
            """Docstring."""
            return (x +
                    1)  # trailing comment
        ''')
    assert structure.code_lines(source) == 3  # def, and the return over two lines


def test_upward_imports_are_found():
    graph = {"aiscientist.records.x": {"aiscientist.agent.y", "aiscientist.util.z"}, "aiscientist.cli.a": {"bench.b"}}
    assert structure.upward_imports(graph) == [
        "aiscientist.cli.a -> bench.b",
        "aiscientist.records.x -> aiscientist.agent.y",
    ]


def test_the_project_meets_every_structure_goal():
    figures = structure.measure()
    unmet = [goal for goal, met in structure.goals(figures).items() if not met]
    shown = {k: figures[k] for k in ("import_cycles", "upward_imports", "over_limit", "crowded_folders")}
    shown |= {k: figures[k][:10] for k in ("long_lines", "run_file_names")}
    assert unmet == [], shown
    assert figures["files"] > 100 and figures["code_lines"] < figures["lines"]
