"""An edit whose old text is not in the file it names says which file of that folder holds it (the 1.5B
model edited train.py for a constant of config.py four times, told only "not found")."""

from __future__ import annotations

from pathlib import Path

from aiscientist.agent.tools import Toolbox, file_tools
from aiscientist.llm.types import ToolCall
from aiscientist.task import load_task
from aiscientist.workspace import Workspace

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "task.yaml"


def _edit(tmp_path: Path, old: str) -> tuple[str, bool]:
    ws = Workspace.create(load_task(TINY), tmp_path / "run")
    box = Toolbox()
    box.add(*file_tools(ws.scope("implementation"), box))
    args = {"path": "submission/train.py", "old": old, "new": "LEARNING_RATE = 0.1"}
    return box.call(ToolCall(id="c", name="edit_file", arguments=args))


def test_a_miss_names_the_file_that_holds_the_old_text(tmp_path: Path) -> None:
    text, ok = _edit(tmp_path, "LEARNING_RATE = 0.05")
    assert not ok
    assert text.endswith("submission/train.py: old text not found; its first line is in submission/config.py "
                         "(edit that file)")  # fmt: skip


def test_a_miss_everywhere_says_only_not_found(tmp_path: Path) -> None:
    text, ok = _edit(tmp_path, "NO_SUCH_CONSTANT = 1 (not [a regex")
    assert not ok and text.endswith("submission/train.py: old text not found")
