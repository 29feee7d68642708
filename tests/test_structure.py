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


def test_the_project_has_no_import_cycle_and_no_file_over_400_lines():
    figures = structure.measure()
    assert figures["import_cycles"] == []
    assert figures["over_limit"] == []
    assert figures["files"] > 100 and figures["code_lines"] < figures["lines"]
