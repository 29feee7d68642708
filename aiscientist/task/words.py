"""A task's shell lines read as words: the simple commands of a line, their programs, and
the files they name. Read only, never run (preflight, the task checks and `task init` use it)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import PurePosixPath

OPERATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;"}
REDIRECTS = {">", ">>", "<", "2>", "&>", ">&", "2>>", ">|"}
BUILTINS = {
    "cd", "export", "set", "unset", "source", ".", "exit", "true", "false", "echo", "test", "[", "[[", "eval", "exec",
    "printf", "read", "shift", "wait", ":", "for", "do", "done", "if", "then", "else", "fi", "while",
}  # fmt: skip
WRAPPERS = {"env", "time", "nice", "nohup", "command", "stdbuf"}
SCRIPT_SUFFIXES = (".py", ".sh")


def segments(command: str) -> Iterator[list[str]]:
    """Simple commands of a shell line (split at &&, ||, ;, |), redirect targets dropped.
    An unparsable line (unbalanced quotes) raises ValueError."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    skip = False
    for token in lexer:
        if token in OPERATORS:
            if words:
                yield words
            words = []
        elif token in REDIRECTS or token.endswith(">"):
            skip = True  # `> out.txt`: the next word is written, not read
        elif skip:
            skip = False
        else:
            words.append(token)
    if words:
        yield words


def strip_prefix(words: list[str]) -> list[str]:
    """Drop `VAR=value` assignments and wrappers such as `env`, `timeout 60`."""
    while words:
        head = words[0]
        if head in WRAPPERS or ("=" in head and head.split("=", 1)[0].isidentifier()):
            words = words[1:]
        elif head == "timeout":
            rest = words[1:]
            while rest and rest[0].startswith("-"):
                rest = rest[1:]
            words = rest[1:]  # the duration
        else:
            break
    return words


def simple_commands(command: str) -> Iterator[list[str]]:
    """The line's simple commands as [program, *args], prefixes dropped, empty ones skipped."""
    for words in segments(command):
        words = strip_prefix(words)
        if words:
            yield words


def is_python(program: str) -> bool:
    return PurePosixPath(program).name.startswith("python")


def python_entry(words: list[str]) -> tuple[str, str] | None:
    """What a `python ...` simple command runs: ("script", path) or ("module", name);
    None for `python -c`, a bare interpreter or another program."""
    if not words or not is_python(words[0]):
        return None
    args = words[1:]
    while args:
        arg = args.pop(0)
        if arg == "-m" and args:
            return "module", args[0]
        if arg == "-c":
            return None
        if arg in ("-W", "-X") and args:
            args.pop(0)
        elif not arg.startswith("-"):
            return "script", arg
    return None
