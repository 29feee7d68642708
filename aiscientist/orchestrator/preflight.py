"""Cheap checks before `solve` spends any budget: every command's program (by bare name or
absolute path) resolves inside the sandbox the steps will use (which also shows that it
starts), the scripts it names exist, the editable and scorer modules' imports resolve inside
it, and the model answers (not for offline models). `task show` runs `check_environment`.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiscientist.experiment.runenv import in_environment, readable_outside
from aiscientist.sandbox.base import SandboxSettings
from aiscientist.task import Task, TaskError
from aiscientist.task.reach import SCORE_LISTS, installed_imports
from aiscientist.task.words import BUILTINS, SCRIPT_SUFFIXES, segments, strip_prefix

COMMAND_LISTS = ("setup_commands", "preprocess_commands", "commands", "postprocess_commands", "test_commands")
ALL_LISTS = (*COMMAND_LISTS, *SCORE_LISTS)


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
    `lookup` says why a program named without a folder, or by absolute path, cannot run."""
    try:
        parts = list(segments(command))
    except ValueError as err:
        return [f"cannot parse the command: {err}"]
    problems = []
    for words in parts:
        words = strip_prefix(words)
        if not words:
            continue
        program, args = words[0], words[1:]
        if program == "cd":
            cwd = cwd / args[0] if args and not args[0].startswith("-") else cwd
            continue
        if program in BUILTINS:
            continue
        name = Path(program).name
        if "/" in program and not program.startswith("/"):
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


def programs_named(task: Task, fields: tuple[str, ...] = ALL_LISTS) -> set[str]:
    """The programs the task's command lines call by bare name (looked up on PATH) or by
    absolute path."""
    names: set[str] = set()
    for field in fields:
        for command in getattr(task, field):
            with contextlib.suppress(ValueError):  # an unparsable line is reported by check_commands
                for words in segments(command):
                    words = strip_prefix(words)
                    if words and words[0] not in BUILTINS and ("/" not in words[0] or words[0].startswith("/")):
                        names.add(words[0])
    return names


def _probe_script(programs: set[str], modules: set[str] = frozenset()) -> str:
    """A bash line printing `NAME<TAB>ok|noexec|missing` for each program, as PATH finds it
    (an absolute path: as it is), then `import:NAME<TAB>ok|missing` for each module."""
    checks = []
    for name in sorted(programs):
        path = shlex.quote(name if name.startswith("/") else "/" + name)
        where = "" if name.startswith("/") else '"$d"'
        loop = "for d in $PATH; do " if where else "for d in /; do "
        checks.append(
            f"s=missing; {loop}if [ -f {where}{path} ] && [ -x {where}{path} ]; then s=ok; break; "
            f'elif [ -e {where}{path} ]; then s=noexec; fi; done; printf "%s\\t%s\\n" {shlex.quote(name)} "$s"'
        )
    if modules:
        names = " ".join(shlex.quote(m) for m in sorted(modules))
        checks.append(f"python -c {shlex.quote(MODULE_PROBE)} {names} 2>/dev/null || true")
    return "IFS=:; " + "; ".join(checks) if checks else "true"


MODULE_PROBE = (
    "import importlib.util as u, sys\n"
    "for n in sys.argv[1:]:\n"
    "    try: ok = u.find_spec(n) is not None\n"
    "    except (ImportError, ValueError): ok = False\n"
    "    print('import:' + n, 'ok' if ok else 'missing', sep='\\t')"
)


@dataclass
class SandboxProbe:
    """What the run's sandbox showed: each program's and module's state (ok, noexec, missing)."""

    backend: str
    states: dict[str, str]

    def lookup(self, program: str) -> str | None:
        """Why `program` cannot run inside the sandbox (None: it can)."""
        state = self.states.get(program, "missing")
        if state == "ok":
            return None
        if state == "noexec":
            return f"program {program!r} is not executable inside the {self.backend} sandbox"
        host = shutil.which(program)
        if host:
            return (
                f"program {program!r} is hidden by the {self.backend} sandbox (on the host it is {host}; the sandbox "
                "shows the system folders, the Python environment that runs aiscientist and the run's own folders)"
            )
        return f"program {program!r} is not installed (not on PATH)"

    def has_module(self, name: str) -> bool:
        return self.states.get(f"import:{name}") == "ok"


def probe_sandbox(task: Task, sandbox: str | SandboxSettings, programs: set[str], modules: set[str]) -> SandboxProbe:
    """Start the run's sandbox once and look `programs` and Python `modules` up inside it.
    A sandbox that cannot start is a TaskError."""
    from aiscientist.sandbox import get_sandbox

    where = task.source or task.repository
    try:
        box = get_sandbox(sandbox)
        with tempfile.TemporaryDirectory(prefix="preflight-") as tmp:
            cwd = task.repository / task.working_dir
            probe = in_environment(task, [_probe_script(programs, modules)])
            readonly = [task.repository, *readable_outside(task)]
            result = box.run(probe, cwd=cwd, timeout=120, writable=[Path(tmp)], readonly=readonly)
    except TaskError:
        raise
    except Exception as err:  # any backend's start-up failure (docker errors included) is the finding
        raise TaskError(where, "sandbox", f"cannot start: {err}") from None
    if not result.ok:
        raise TaskError(where, "sandbox", f"cannot start: {result.failure() or 'the probe command failed'}")
    states = dict(line.split("\t", 1) for line in result.stdout_tail.splitlines() if "\t" in line)
    return SandboxProbe(box.name, states)


def sandbox_lookup(task: Task, sandbox: str | SandboxSettings) -> ProgramLookup:
    """Every program of the task looked up inside the run's sandbox, as a lookup."""
    return probe_sandbox(task, sandbox, programs_named(task), set()).lookup


def check_commands(task: Task, lookup: ProgramLookup = on_host) -> None:
    """Every command list of the task, read against the task's repository. A paper task's
    scripts (its reproduce.sh) are the agent's to write: only its programs are checked, as for
    the score commands (the files they name are checked when the task is loaded)."""
    cwd = task.repository / task.working_dir
    made_by_setup = " ".join([*task.setup_commands, *task.preprocess_commands])
    earlier = ""  # what the commands before this one may have made (FML-bench copies its postprocess.py in first)
    for field in ALL_LISTS:
        scripts = task.kind == "improve" and field in COMMAND_LISTS
        for command in getattr(task, field):
            made = earlier if field == "setup_commands" else f"{made_by_setup} {earlier}"
            problems = command_problems(command, cwd, made, scripts=scripts, lookup=lookup)
            if problems:
                raise TaskError(task.source or task.repository, field, f"{command!r}: " + "; ".join(problems))
            earlier += " " + command


def check_imports(task: Task, probe: SandboxProbe) -> None:
    """The editable and scorer modules' imports that must come installed, found inside the sandbox."""
    for name, (field, rel, imp) in sorted(installed_imports(task).items()):
        if not probe.has_module(name):
            raise TaskError(
                task.source or task.repository,
                field,
                f"{rel}: line {imp.line} imports {name!r}, which does not resolve inside the {probe.backend} sandbox "
                "(neither a file of the repository nor installed in the Python environment it shows)",
            )


def check_task(task: Task, sandbox: str | SandboxSettings) -> None:
    """The commands' programs and scripts and the modules' imports, looked up inside the
    sandbox the steps use."""
    probe = probe_sandbox(task, sandbox, programs_named(task), set(installed_imports(task)))
    check_commands(task, probe.lookup)
    check_imports(task, probe)


def check_environment(task: Task, sandbox: str | SandboxSettings) -> None:
    """What `task show` checks inside the sandbox: programs named by absolute path, and the
    editable and scorer modules' installed imports."""
    absolute = {p for p in programs_named(task) if p.startswith("/")}
    modules = set(installed_imports(task))
    if not absolute and not modules:
        return
    probe = probe_sandbox(task, sandbox, absolute, modules)
    for field in ALL_LISTS:
        for command in getattr(task, field):
            problems = [why for p in sorted(absolute) if p in command and (why := probe.lookup(p))]
            if problems:
                raise TaskError(task.source or task.repository, field, f"{command!r}: " + "; ".join(problems))
    check_imports(task, probe)


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
    """The model first (a missing key or a refused connection is named within seconds), then
    `check_task` (programs, scripts and imports looked up inside the sandbox the steps use)."""
    check_model(model, models_file, model_timeout_s)
    check_task(task, sandbox)
