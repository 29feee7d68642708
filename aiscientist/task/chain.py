"""An FML-bench command line (`a && b && c`) as separate commands, so each runs in a
sandbox invocation of its own with the process tree of the one before dead: FML-bench's
evaluators import editable code, and a child `a` leaves running could otherwise rewrite
what `b` writes (issue #27).

The line is scanned as the shell reads it: `&&` inside quotes, `$(...)`, backticks or a
`( )`/`{ }` group does not split it. Parts that change the shell's state for the rest of
the line (`cd`, `export`, a bare assignment, `source`, `conda activate`) are not run alone:
they lead every later command, so `cd src && python train.py && python eval.py` becomes
`cd src && python train.py` and `cd src && python eval.py`. A line with other top-level
control (`;`, `||`, a background `&`, a newline, a function definition) or unbalanced
quoting is kept whole.
"""

from __future__ import annotations

import re

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_STATE_WORDS = (
    r"cd|pushd|popd|export|unset|source|\.|set|shopt|umask|alias|declare|typeset|readonly|eval"
    r"|conda\s+(?:de)?activate"
)
_KEEPS_STATE = re.compile(rf"(?:{_STATE_WORDS})(?:\s.*)?|(?:{_NAME}=\S*\s*)+", re.DOTALL)


def split_chain(line: str) -> list[str]:
    """`line` as the commands to run one per invocation (see the module docstring)."""
    parts = _top_level_parts(line)
    if parts is None or len(parts) < 2 or any(not p for p in parts) or "()" in line:
        return [line]
    commands: list[str] = []
    state: list[str] = []
    carried = 0  # how many state parts the last command carries
    for part in parts:
        if _KEEPS_STATE.fullmatch(part):
            state.append(part)
        else:
            commands.append(" && ".join([*state, part]))
            carried = len(state)
    if not commands:
        return [line]
    if len(state) > carried:
        commands.append(" && ".join(state))  # state parts after the last command still run (and may fail)
    return commands


def _top_level_parts(line: str) -> list[str] | None:
    """The stripped parts between top-level `&&`; None for other top-level control or
    unbalanced quoting and grouping."""
    parts: list[str] = []
    start, depth, quote, i = 0, 0, "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch == "\\":
            i += 1
        elif ch in "'\"`":
            quote = ch
        elif ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and line.startswith("&&", i):
            parts.append(line[start:i].strip())
            start = i + 2
            i += 1
        elif depth == 0 and (ch in ";\n" or line.startswith("||", i) or _background(line, i)):
            return None
        i += 1
    if quote or depth:
        return None
    return [*parts, line[start:].strip()]


def _background(line: str, i: int) -> bool:
    """Whether the `&` at `i` sends a command to the background (not `>&`, `&>` or `|&`)."""
    return line[i] == "&" and not (i and line[i - 1] in ">|") and not line.startswith("&>", i)
