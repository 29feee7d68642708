"""Cheap checks before `solve` spends any budget: every command's program resolves inside
the sandbox the steps will use (which also shows that it starts), the scripts it names
exist, and the model answers (not for offline models).

A failure is a TaskError (exit 2) naming the command and the missing piece. A script
that a setup or preprocess command mentions is assumed to be made by it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from aiscientist.experiment.runenv import in_environment, readable_outside
from aiscientist.sandbox.base import SandboxSettings
from aiscientist.task import Task, TaskError

OPERATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;"}
REDIRECTS = {">", ">>", "<", "2>", "&>", ">&", "2>>", ">|"}
BUILTINS = {
    "cd",
    "export",
    "set",
    "unset",
    "source",
    ".",
    "exit",
    "true",
    "false",
    "echo",
    "test",
    "[",
    "[[",
    "eval",
    "exec",
    "printf",
    "read",
    "shift",
    "wait",
    ":",
    "for",
    "do",
    "done",
    "if",
    "then",
    "else",
    "fi",
    "while",
}
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


ProgramLookup = Callable[[str], str | None]


def on_host(program: str) -> str | None:
    """Why `program` cannot run when looked up on the host's PATH (None: it can)."""
    return None if shutil.which(program) else f"program {program!r} is not installed (not on PATH)"


def command_problems(
    command: str,
    cwd: Path,
    made_by_setup: str = "",
    scripts: bool = True,
    lookup: ProgramLookup = on_host,
) -> list[str]:
    """What in one shell line cannot run from `cwd` (an empty list when all is there);
    `scripts=False` checks installed programs only (the agent writes the scripts);
    `lookup` says why a program named without a folder cannot run."""
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
        elif (why := lookup(program)) is not None:
            problems.append(why)
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


def programs_named(task: Task) -> set[str]:
    """The programs the task's command lines call by bare name (looked up on PATH)."""
    names: set[str] = set()
    for field in COMMAND_LISTS:
        for command in getattr(task, field):
            with contextlib.suppress(ValueError):  # an unparsable line is reported by check_commands
                for words in _segments(command):
                    words = _strip_prefix(words)
                    if words and words[0] not in BUILTINS and "/" not in words[0]:
                        names.add(words[0])
    return names


def _probe_script(programs: set[str]) -> str:
    """A bash line printing `NAME<TAB>ok|noexec|missing` for each program, as PATH finds it."""
    checks = []
    for name in sorted(programs):
        path = shlex.quote("/" + name)
        checks.append(
            f's=missing; for d in $PATH; do if [ -f "$d"{path} ] && [ -x "$d"{path} ]; then s=ok; break; '
            f'elif [ -e "$d"{path} ]; then s=noexec; fi; done; printf "%s\\t%s\\n" {shlex.quote(name)} "$s"'
        )
    return "IFS=:; " + "; ".join(checks) if checks else "true"


def sandbox_lookup(task: Task, sandbox: str | SandboxSettings) -> ProgramLookup:
    """Start the run's sandbox once, look every program of the task up inside it, and
    return the answers as a lookup. A sandbox that cannot start is a TaskError."""
    from aiscientist.sandbox import get_sandbox

    where = task.source or task.repository
    programs = programs_named(task)
    try:
        box = get_sandbox(sandbox)
        with tempfile.TemporaryDirectory(prefix="preflight-") as tmp:
            cwd = task.repository / task.working_dir
            probe = in_environment(task, [_probe_script(programs)])
            readonly = [task.repository, *readable_outside(task)]
            result = box.run(probe, cwd=cwd, timeout=120, writable=[Path(tmp)], readonly=readonly)
    except TaskError:
        raise
    except Exception as err:  # any backend's start-up failure (docker errors included) is the finding
        raise TaskError(where, "sandbox", f"cannot start: {err}") from None
    if not result.ok:
        raise TaskError(where, "sandbox", f"cannot start: {result.failure() or 'the probe command failed'}")
    states = dict(line.split("\t", 1) for line in result.stdout_tail.splitlines() if "\t" in line)

    def lookup(program: str) -> str | None:
        state = states.get(program, "missing")
        if state == "ok":
            return None
        if state == "noexec":
            return f"program {program!r} is not executable inside the {box.name} sandbox"
        host = shutil.which(program)
        if host:
            return (
                f"program {program!r} is hidden by the {box.name} sandbox (on the host it is {host}; the sandbox "
                "shows the system folders and the Python environment that runs aiscientist)"
            )
        return f"program {program!r} is not installed (not on PATH)"

    return lookup


def check_commands(task: Task, lookup: ProgramLookup = on_host) -> None:
    """Every command list of the task, read against the task's repository. A paper task's
    scripts (its reproduce.sh) are the agent's to write: only its programs are checked."""
    cwd = task.repository / task.working_dir
    made_by_setup = " ".join([*task.setup_commands, *task.preprocess_commands])
    earlier = ""  # what the commands before this one may have made (FML-bench copies its postprocess.py in first)
    for field in COMMAND_LISTS:
        for command in getattr(task, field):
            made = earlier if field == "setup_commands" else f"{made_by_setup} {earlier}"
            problems = command_problems(command, cwd, made, scripts=task.kind == "improve", lookup=lookup)
            if problems:
                raise TaskError(task.source or task.repository, field, f"{command!r}: " + "; ".join(problems))
            earlier += " " + command


def check_model(model: str, models_file: Path | None, timeout_s: float = 600) -> None:
    """One tiny request with no retries, waiting up to `timeout_s` (a local model on a CPU
    may take minutes to answer first); offline, scripted and replayed models are skipped.
    The TaskError leads with the cause (missing API key, unknown model, connection refused,
    host unreachable, timed out, ...); only a timeout suggests waiting longer."""
    from aiscientist.llm import ModelConfigError, ModelError, load_llm_config, make_client
    from aiscientist.llm.config import REPLAY_ENV

    if model == "offline" or model.startswith("scripted:") or os.environ.get(REPLAY_ENV):
        return
    try:
        config = load_llm_config(model, models_file, max_attempts=1, max_tokens=8, timeout_s=timeout_s)
        make_client(model, None, "preflight", config).complete([{"role": "user", "content": "Reply with the word OK."}])
    except ModelConfigError as err:
        raise TaskError("--model", model, str(err)) from None
    except ModelError as err:
        hint = "--no-preflight skips this check"
        if err.cause.startswith("timed out"):
            hint = f"a slow local model may need more: --set preflight_model_timeout_s=SECONDS, or {hint}"
        raise TaskError("--model", model, f"{err.cause}; {hint}") from None


def preflight(
    task: Task,
    model: str,
    sandbox: str | SandboxSettings,
    models_file: Path | None = None,
    model_timeout_s: float = 600,
) -> None:
    """The model first (a missing key or a refused connection is named within seconds), then the
    commands' programs and scripts (looked up inside the sandbox the steps use)."""
    check_model(model, models_file, model_timeout_s)
    check_commands(task, sandbox_lookup(task, sandbox))
