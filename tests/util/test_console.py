"""The console stays honest: no raw control sequence from experiment code reaches it."""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rich.live import Live
from rich.table import Table

from aiscientist.util.console import SafeConsole, log_handler

ROOT = Path(__file__).resolve().parents[2]
# window title, clear screen, clipboard write, hyperlink
SEQUENCES = ["\x1b]0;", "\x1b[2J", "\x1b]52;", "\x1b]8;"]  # rich moves the cursor itself, so no check there
EVIL = "boom \x1b]0;owned\x07 \x1b[2J \x1b]52;c;aGk=\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[1A\x1b[2K"


def _raw(text: str) -> list[str]:
    return [seq for seq in SEQUENCES if seq in text]


def test_every_way_rich_prints_shows_escapes_instead_of_sending_them():
    outputs = []
    for show in ("print", "table", "status", "live"):
        buffer = io.StringIO()
        console = SafeConsole(file=buffer, force_terminal=True, width=200)
        if show == "print":
            console.print(f"[red]error:[/red] {EVIL}\nsecond line")
        elif show == "table":
            table = Table()
            table.add_column("last")
            table.add_row(EVIL)
            console.print(table)
        elif show == "status":
            with console.status(EVIL):
                pass
        else:
            with Live(console=console) as live:
                live.update(EVIL)
        outputs.append(buffer.getvalue())
    for show, text in zip(("print", "table", "status", "live"), outputs, strict=True):
        assert _raw(text) == [], show
        assert "\\x1b" in text, show  # shown, visibly escaped
    assert "\x1b[31m" in outputs[0] and "\nsecond line" in outputs[0]  # our own styling and lines still work


def test_log_lines_are_cleaned_too():
    handler = log_handler()
    handler.stream = io.StringIO()
    record = logging.LogRecord("aiscientist.x", logging.WARNING, __file__, 1, "watcher: %s", (EVIL,), None)
    handler.emit(record)
    assert _raw(handler.stream.getvalue()) == [] and "WARNING aiscientist.x: watcher: boom" in handler.stream.getvalue()


def test_a_failing_step_cannot_drive_the_terminal_of_solve(tmp_path):
    shutil.copytree(ROOT / "tests" / "fixtures" / "tiny", tmp_path / "tiny")
    (tmp_path / "tiny" / "repo" / "train.py").write_text(
        f"import sys\nsys.stderr.write({EVIL!r} + '\\n')\nsys.exit(1)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    command = [sys.executable, "-m", "aiscientist", "solve", "tiny/task.yaml", "--model", "offline", "--steps", "1"]
    done = subprocess.run(
        [*command, "--run-dir", "run", "--sandbox", "local"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1  # no successful step
    shown = done.stdout + done.stderr
    assert "did not count" in shown and "boom" in shown  # the error is shown ...
    assert _raw(shown) == []  # ... with its sequences made visible


def test_untrusted_brackets_cannot_make_rich_link_or_crash():
    """Markup made of untrusted names: `[link=...]` would make rich send OSC 8 itself, and
    brackets that are not valid markup (`a[` + `/` + `x]`) raised MarkupError (#27)."""
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, width=200, highlight=False)
    table = Table()
    table.add_column("case")
    table.add_row("[link=mailto:a@evil]click me[/link]")
    console.print(table)
    console.print("graded [link=https://evil.example]here[/link]")
    console.print("graded a[/x]: root 0.000")
    out = buffer.getvalue()
    assert _raw(out) == [] and "click me" in out and "a[/x]: root 0.000" in out
