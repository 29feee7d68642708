"""benchmarks/structure.py: its measures, and the structure goals the project keeps."""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("structure", ROOT / "benchmarks" / "structure.py")
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
    shown |= {k: figures[k][:10] for k in ("long_lines", "run_folder_literals", "repeated_blocks")}
    shown["duplicated_classes"] = figures["duplicated_classes"]
    assert unmet == [], shown
    assert figures["files"] > 100 and figures["code_lines"] < figures["lines"]


def test_run_folder_literals_are_counted_outside_records_only():
    names, areas = structure.run_folder_names()
    assert {"submission", ".pristine", "manifest.json", "task.json", "ws", "error.txt"} <= names
    assert {"submission", "experiments", "logs", ".pristine"} <= areas and "files" not in areas
    source = textwrap.dedent('''
        """A docstring may say submission/train.py and .pristine/manifest.json."""
        a = root / ".pristine" / "manifest.json"
        b = f"submission/{rel}"
        c = area == "logs"
        d = "see runs/.../error.txt for it"
        e = payload["files"], "files" in payload, key == "code", "https://x.org/files/code"
        ''')
    trees = {
        structure.ROOT / "bench" / "x.py": ast.parse(source),
        structure.ROOT / "aiscientist/records/y.py": ast.parse(source),
    }
    found = structure.run_folder_literals(trees)
    assert [f.split(" ")[0] for f in found] == [
        "bench/x.py:3",
        "bench/x.py:3",
        "bench/x.py:4",
        "bench/x.py:5",
        "bench/x.py:6",
    ]


def test_a_repeated_block_is_found_but_shared_imports_and_signatures_are_not():
    body = "".join(f"    total += step_{i}(x)\n" for i in range(6))
    a = f"import os\nimport sys\n\n\ndef f(x):\n    total = 0\n{body}    return total\n"
    b = f'def g(x):\n    """g."""\n    total = 1\n{body}    return -total\n'
    assert structure.repeated_blocks({"a.py": a, "b.py": b}) == ["a.py:7 ~ b.py:4"]
    imports = "".join(f"import {name}\n" for name in ("os", "re", "sys", "json", "time", "math"))
    params = "".join(f"        {name}: int,\n" for name in ("self", "commands", "cwd", "timeout", "env"))
    protocol = f"{imports}\nclass P:\n    def run(\n{params}    ) -> int: ...\n"
    implementation = f"{imports}\nclass Q:\n    def run(\n{params}    ) -> int:\n        return 0\n"
    assert structure.repeated_blocks({"p.py": protocol, "q.py": implementation}) == []


def test_a_function_local_import_closes_a_cycle_but_a_type_checking_one_does_not():
    a = "import os\n\n\ndef f():\n    from pkg import b\n\n    return b\n"
    b = "from typing import TYPE_CHECKING\n\nimport pkg.a\n\nif TYPE_CHECKING:\n    import pkg.c\n"
    modules = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    assert structure.imports_at_load(ast.parse(a), modules) == set()
    graph = {name: structure.all_imports(ast.parse(text), modules) for name, text in (("pkg.a", a), ("pkg.b", b))}
    assert graph == {"pkg.a": {"pkg", "pkg.b"}, "pkg.b": {"pkg.a"}}
    assert structure.cycles(graph | {"pkg": set(), "pkg.c": set()}) == [["pkg.a", "pkg.b"]]


def test_a_class_name_defined_in_two_modules_is_found():
    trees = {
        structure.ROOT / "x.py": ast.parse("class Node:\n    pass\n\n\nclass Only:\n    pass\n"),
        structure.ROOT / "y.py": ast.parse("def f():\n    class Node:\n        pass\n"),
    }
    assert structure.duplicated_classes(trees) == {"Node": ["x.py", "y.py"]}
