"""Agents on real-sized files: a file longer than one tool result is read in pages of whole
lines, each saying exactly how to go on; prompts that show files do the same; the offline
policy pages through a 40,000-character trainer and changes its argparse defaults at the end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aiscientist.agent.context import RunContext
from aiscientist.agent.shell import CUT_OUTPUT, run_shell
from aiscientist.agent.tools import RESULT_CHARS, Toolbox, file_tools
from aiscientist.llm.offline.search import parse_marker
from aiscientist.llm.types import ToolCall
from aiscientist.records.step import load_steps
from aiscientist.specialists.base import SpecialistResult, shown_files
from aiscientist.task import load_task
from aiscientist.util.paging import next_start
from aiscientist.workspace import Workspace
from bench.agents.react import Linear
from tests.fixtures.long_trainer import long_task

TRAINER = "submission/trainer.py"


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Workspace:
    root = tmp_path_factory.mktemp("long")
    return Workspace.create(load_task(long_task(root)), root / "run")


def _box(ws: Workspace, chars: int = RESULT_CHARS) -> Toolbox:
    box = Toolbox(result_chars=chars)
    return box.add(*file_tools(ws.scope("agent"), box))


def _call(box: Toolbox, name: str, **arguments) -> str:
    text, ok = box.call(ToolCall(id="c", name=name, arguments=arguments))
    assert ok, text
    return text


NOTE = re.compile(
    r"\[(\d+) more lines? \(from line (\d+)\) not shown; continue with (\w+)\(path=\"(.+)\", (\w+)=(\d+)\)\]$"
)


@pytest.mark.parametrize(
    ("tool", "start", "chars"), [("read_file", "start_line", RESULT_CHARS), ("read_file_chunk", "start", 1500)]
)
def test_a_long_file_is_read_in_pages_that_say_how_to_go_on(ws, tool, start, chars) -> None:
    source = (ws.paths.submission / "trainer.py").read_text()
    lines, total = source.splitlines(keepends=True), source.count("\n")
    box, pages, line = _box(ws, chars), [], 1
    while line is not None:
        first = line
        args = {"path": TRAINER, start: line} | ({"max_lines": 5000} if tool == "read_file" else {"n": 5000})
        result = _call(box, tool, **args)
        assert len(result) <= chars
        note = NOTE.search(result)
        text, line = next_start(result)
        if note:  # the tool, the line to start from and how many lines remain
            remaining, going_on, named, path, arg, value = note.groups()
            assert (named, path, arg, int(value), int(going_on)) == (tool, TRAINER, start, line, line)
            assert int(remaining) == total - line + 1
            assert text == "".join(lines[first - 1 : line - 1])  # whole lines only
        pages.append(text)
    assert len(pages) >= 4 and "".join(pages) == source  # nothing lost, nothing repeated


def test_max_lines_pages_by_lines_and_past_the_end_says_how_long_the_file_is(ws) -> None:
    box = _box(ws)
    first = _call(box, "read_file", path=TRAINER, max_lines=3)
    total = (ws.paths.submission / "trainer.py").read_text().count("\n")
    assert first.endswith(
        f'[{total - 3} more lines (from line 4) not shown; continue with read_file(path="{TRAINER}", start_line=4)]'
    )
    assert first.count("\n") == 3
    assert (
        _call(box, "read_file", path=TRAINER, start_line=total + 5)
        == f"({TRAINER} has {total} lines: none from line {total + 5})"
    )


def test_any_other_clipped_result_says_what_it_left_out_and_how_to_see_it(ws) -> None:
    result = _call(_box(ws), "search_files", pattern="pipeline|a policy that reads", path="submission")
    assert len(result) <= RESULT_CHARS
    assert re.search(
        r"\n\[\d+ more lines \(\d+ characters\) not shown; narrow the pattern or the path to see the others\]$", result
    )


def test_a_prompt_shows_a_long_file_in_part_with_the_call_that_reads_on(ws) -> None:
    ctx = RunContext(agent="aiscientist", ws=ws, model="offline", steps=1)
    shown = shown_files(ctx, "implementation", [TRAINER])
    assert len(shown) < 9000 and "```\n[" in shown
    assert re.search(
        r"\n\[\d+ more lines \(from line \d+\) not shown; "
        rf'continue with read_file\(path="{TRAINER}", start_line=\d+\)\]$',
        shown,
    )


def test_the_offline_policy_pages_through_a_long_file_and_changes_main_near_its_end(tmp_path: Path) -> None:
    task = load_task(long_task(tmp_path))
    ws = Workspace.create(task, tmp_path / "run")
    source = (ws.paths.submission / "trainer.py").read_text()
    assert len(source) > 40_000
    Linear().solve(RunContext(agent="linear", ws=ws, model="offline", steps=2))
    steps = load_steps(ws.paths)
    assert len(steps) == 2 and all(s.success for s in steps)
    changes = [parse_marker(s.hypothesis) for s in steps]
    lines = len(source.splitlines())
    assert all(c is not None and c.name in ("lr", "max_steps") and c.line > 0.95 * lines for c in changes), changes
    diff = (ws.paths.root / steps[0].diff_path).read_text()
    assert re.search(r'^\+    parser\.add_argument\("--(lr|max-steps)", type=\w+, default=[\d.]+\)$', diff, re.M)
    reads = [json.loads(line) for line in (ws.paths.logs / "llm_calls.jsonl").read_text().splitlines()]
    assert sum("read_file" in r.get("tool_calls", []) for r in reads) >= 4  # one page after another


def test_a_long_shell_output_and_a_long_specialist_summary_say_how_to_see_the_rest(ws) -> None:
    long = run_shell(ws, "agent", "python -c \"print('x' * 9000)\"")
    assert long.startswith("[exit 0]") and long.endswith(f"[{CUT_OUTPUT}]")
    assert not run_shell(ws, "agent", "echo short").endswith(f"[{CUT_OUTPUT}]")
    result = SpecialistResult(role="comprehension", summary="a note\n" * 1000, artifacts=["paper_analysis/summary.md"])
    shown = result.for_orchestrator(file_bus=True, limit=1500)
    assert len(shown) < 1600 and "more lines (" in shown and "not shown; its files hold the rest (Artifacts)]" in shown
