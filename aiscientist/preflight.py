"""Cheap checks before `solve` spends any budget: every command's program and the scripts
it names exist, the sandbox starts, and the model answers (not for offline models).

A failure is a TaskError (exit 2) naming the command and the missing piece. A script
that a setup or preprocess command mentions is assumed to be made by it.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from aiscientist.sandbox.base import SandboxSettings
from aiscientist.task import Task, TaskError

OPERATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;"}
REDIRECTS = {">", ">>", "<", "2>", "&>", ">&", "2>>", ">|"}
BUILTINS = {"cd", "export", "set", "unset", "source", ".", "exit", "true", "false", "echo", "test", "[", "[[", "eval", "exec", "printf", "read", "shift", "wait", ":", "for", "do", "done", "if", "then", "else", "fi", "while"}
WRAPPERS = {"env", "time", "nice", "nohup", "command", "stdbuf"}
SCRIPT_SUFFIXES = (".py", ".sh")
COMMAND_LISTS = ("setup_commands", "preprocess_commands", "commands", "postprocess_commands", "test_commands")


def _segments(command: str) -> Iterator[list[str]]:
    """Simple commands of a shell line (split at &&, ||, ;, |), redirect targets dropped."""
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


def _strip_prefix(words: list[str]) -> list[str]:
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


def _python_module(module: str, cwd: Path) -> bool:
    local = cwd / Path(*module.split("."))
    if local.with_suffix(".py").is_file() or (local / "__init__.py").is_file() or local.is_dir():
        return True
    return importlib.util.find_spec(module.split(".")[0]) is not None


def command_problems(command: str, cwd: Path, made_by_setup: str = "", scripts: bool = True) -> list[str]:
    """What in one shell line cannot run from `cwd` (an empty list when all is there);
    `scripts=False` checks installed programs only (the agent writes the scripts)."""
    try:
        segments = list(_segments(command))
    except ValueError as err:
        return [f"cannot parse the command: {err}"]
    problems = []
    for words in segments:
        words = _strip_prefix(words)
        if not words:
            continue
        program, args = words[0], words[1:]
        if program == "cd":
            cwd = cwd / args[0] if args and not args[0].startswith("-") else cwd
            continue
        if program in BUILTINS:
            continue
        name = Path(program).name
        if "/" in program:
            if scripts and not (cwd / program).exists() and name not in made_by_setup:
                problems.append(f"program {program!r} does not exist in the submission")
        elif shutil.which(program) is None:
            problems.append(f"program {program!r} is not installed (not on PATH)")
        if scripts and name.startswith("python") and "-m" in args[:-1]:
            module = args[args.index("-m") + 1]
            if not _python_module(module, cwd):
                problems.append(f"python module {module!r} is neither in the submission nor installed")
        for arg in args if scripts else []:
            if arg.endswith(SCRIPT_SUFFIXES) and not arg.startswith("-") and "=" not in arg:
                if not (cwd / arg).exists() and Path(arg).name not in made_by_setup:
                    problems.append(f"script {arg!r} does not exist in the submission")
        made_by_setup += " " + " ".join(words)  # `cp SRC ./x.py && python x.py`
    return problems


def check_commands(task: Task) -> None:
    """Every command list of the task, read against the task's repository. A paper task's
    scripts (its reproduce.sh) are the agent's to write: only its programs are checked."""
    cwd = task.repository / task.working_dir
    made_by_setup = " ".join([*task.setup_commands, *task.preprocess_commands])
    earlier = ""  # what the commands before this one may have made (FML-bench copies its postprocess.py in first)
    for field in COMMAND_LISTS:
        for command in getattr(task, field):
            problems = command_problems(command, cwd, earlier if field == "setup_commands" else f"{made_by_setup} {earlier}", scripts=task.kind == "improve")
            if problems:
                raise TaskError(task.source or task.repository, field, f"{command!r}: " + "; ".join(problems))
            earlier += " " + command


def check_sandbox(task: Task, sandbox: str | SandboxSettings) -> None:
    """Start the configured sandbox once with a command that does nothing."""
    from aiscientist.sandbox import get_sandbox

    try:
        box = get_sandbox(sandbox)
        with tempfile.TemporaryDirectory(prefix="preflight-") as tmp:
            result = box.run(["true"], cwd=Path(tmp), timeout=60, writable=[Path(tmp)])
    except Exception as err:  # any backend's start-up failure (docker errors included) is the finding
        raise TaskError(task.source or task.repository, "sandbox", f"cannot start: {err}") from None
    if not result.ok:
        raise TaskError(task.source or task.repository, "sandbox", f"cannot start: {result.failure() or 'a no-op command failed'}")


def check_model(model: str, models_file: Path | None) -> None:
    """One tiny request with no retries; offline, scripted and replayed models are skipped."""
    from aiscientist.llm import ModelConfigError, ModelError, load_llm_config, make_client
    from aiscientist.llm.config import REPLAY_ENV

    if model == "offline" or model.startswith("scripted:") or os.environ.get(REPLAY_ENV):
        return
    try:
        config = load_llm_config(model, models_file, max_attempts=1, max_tokens=8, timeout_s=30)
        make_client(model, None, "preflight", config).complete([{"role": "user", "content": "Reply with the word OK."}])
    except (ModelError, ModelConfigError) as err:
        raise TaskError("--model", model, f"the model does not answer: {err}") from None


def preflight(task: Task, model: str, sandbox: str | SandboxSettings, models_file: Path | None = None) -> None:
    check_commands(task)
    check_sandbox(task, sandbox)
    check_model(model, models_file)
