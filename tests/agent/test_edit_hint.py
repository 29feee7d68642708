"""An edit whose old text is not in the file it names but in one other file of that folder the role may
change is made there, and says so (the 1.5B model edited train.py for a constant of config.py ten times,
told where the text was); a protected file is never that file."""

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


def test_a_miss_is_made_in_the_one_file_of_the_folder_that_holds_the_old_text(tmp_path: Path) -> None:
    text, ok = _edit(tmp_path, "LEARNING_RATE = 0.05")
    assert ok and text.startswith("edited submission/config.py (the old text is there, not in submission/train.py)")
    config = (tmp_path / "run" / "submission" / "config.py").read_text()
    assert "LEARNING_RATE = 0.1\n" in config and "0.05" not in config


def test_text_of_a_protected_file_is_never_edited_there(tmp_path: Path) -> None:
    repo = TINY.parent / "repo"
    editable = (repo / "train.py").read_text() + (repo / "config.py").read_text()
    protected = next(line for line in (repo / "evaluate.py").read_text().splitlines() if line and line not in editable)
    text, ok = _edit(tmp_path, protected)
    assert not ok and text.endswith("submission/train.py: old text not found")
    assert (tmp_path / "run" / "submission" / "evaluate.py").read_text() == (repo / "evaluate.py").read_text()


def test_a_miss_everywhere_says_only_not_found(tmp_path: Path) -> None:
    text, ok = _edit(tmp_path, "NO_SUCH_CONSTANT = 1 (not [a regex")
    assert not ok and text.endswith("submission/train.py: old text not found")
