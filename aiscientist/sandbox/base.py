"""The one interface every sandbox backend implements."""

from __future__ import annotations

import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from aiscientist.records.causes import FailureCause
from aiscientist.sandbox.cgroup import MemoryUse, memory_enforcement

TAIL_CHARS = 8000

# The only host variables commands get unasked: locale and time zone, by exact name and
# only when the value looks like one (a planted `LC_API_TOKEN`, or a secret in `LANGUAGE`,
# stays out). The rest of their environment is ours (PATH, HOME, TMPDIR, PYTHON*, what the
# caller passes) or named by the task (`sandbox.pass_env`): no credential reaches experiment
# code by default.
_LOCALE = r"(C|POSIX|[a-z]{2,3}(_[A-Z]{2})?)(\.[A-Za-z0-9-]{1,20})?(@[a-z]{1,20})?"
_LOCALE_NAMES = ("ALL", "CTYPE", "NUMERIC", "TIME", "COLLATE", "MONETARY", "MESSAGES", "PAPER", "NAME", "ADDRESS")
_HOST_ALLOWED: dict[str, re.Pattern[str]] = {
    "LANG": re.compile(_LOCALE),
    "LANGUAGE": re.compile(rf"{_LOCALE}(:{_LOCALE}){{0,7}}"),
    "TZ": re.compile(r":?/?[A-Za-z0-9_+-]{1,30}(/[A-Za-z0-9_+-]{1,30}){0,3}"),
    **{f"LC_{n}": re.compile(_LOCALE) for n in (*_LOCALE_NAMES, "TELEPHONE", "MEASUREMENT", "IDENTIFICATION")},
}

BackendName = Literal["auto", "bwrap", "local", "docker"]
BACKENDS: tuple[str, ...] = get_args(BackendName)


class SandboxSettings(BaseModel):
    """The `sandbox` section of a run's config: which backend, and the limits every
    command it runs gets. A bare string (`sandbox: bwrap`) means just the backend."""

    model_config = ConfigDict(extra="forbid")
    backend: BackendName = "auto"
    memory_mb: int | None = Field(
        8192, ge=64, description="memory per invocation: processes, tmpfs, shared memory (None: unlimited)"
    )
    processes: int | None = Field(1024, ge=16, description="processes and threads per sandbox (None: unlimited)")
    file_size_mb: int | None = Field(4096, ge=1, description="largest file a command may write (None: unlimited)")
    cpus: float | None = Field(None, gt=0, description="docker: CPU quota (None: all)")
    image: str | None = Field(None, description="docker: run image (None: the locally built default)")
    gpus: str | None = Field(None, description="docker: GPU passthrough, e.g. 'all' (None: no GPU)")

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: object) -> object:
        return {"backend": value} if isinstance(value, str) else value


class CommandsResult(BaseModel):
    """What a command list did. `returncodes` has one entry per command that ran;
    the list stops at the first failure."""

    commands: list[str]
    returncodes: list[int]
    stdout_tail: str = ""
    stderr_tail: str = ""
    duration_s: float
    timed_out: bool = False
    backend: str
    stdout_bytes: int = 0  # what the commands wrote in all (only the tails are kept)
    stderr_bytes: int = 0
    survivors: int = 0  # processes still alive after the last kill (none may be, before scoring)
    memory: MemoryUse | None = None  # how memory was limited and what the invocation used

    @property
    def ok(self) -> bool:
        return (
            not self.timed_out
            and not self.survivors
            and not self.out_of_memory
            and len(self.returncodes) == len(self.commands)
            and all(rc == 0 for rc in self.returncodes)
        )

    def then(self, later: CommandsResult) -> CommandsResult:
        """This run followed by `later` (e.g. a step's commands, then its scoring) as one."""
        return CommandsResult(
            commands=self.commands + later.commands,
            returncodes=self.returncodes + later.returncodes,
            stdout_tail=(self.stdout_tail + later.stdout_tail)[-TAIL_CHARS:],
            stderr_tail=(self.stderr_tail + later.stderr_tail)[-TAIL_CHARS:],
            duration_s=self.duration_s + later.duration_s,
            timed_out=later.timed_out,
            backend=self.backend,
            stdout_bytes=self.stdout_bytes + later.stdout_bytes,
            stderr_bytes=self.stderr_bytes + later.stderr_bytes,
            survivors=self.survivors + later.survivors,
            memory=_both(self.memory, later.memory),
        )

    @property
    def out_of_memory(self) -> bool:
        """The kernel killed a process of the invocation at its memory limit (the run failed, even
        when its command carried on without it)."""
        return bool(self.memory and self.memory.oom_kills)

    def failure_cause(self) -> FailureCause | None:
        if self.timed_out:
            return FailureCause.TIMEOUT
        if self.out_of_memory:
            return FailureCause.MEMORY
        failed = [rc for rc in self.returncodes if rc != 0]
        if not failed:
            return None
        return FailureCause.COMMAND_NOT_FOUND if failed[0] in (126, 127) else FailureCause.EXIT_CODE

    def failure(self) -> str | None:
        """A short reason when the run did not succeed."""
        if self.timed_out:
            return f"timed out running: {self.commands[len(self.returncodes) - 1]}"
        if self.memory is not None and self.out_of_memory:
            rc, command = self.returncodes[-1], self.commands[len(self.returncodes) - 1]
            return (
                f"stopped at the memory limit (sandbox.memory_mb = {self.memory.limit_mb}, {self.memory.enforced_by}; "
                f"peak {self.memory.peak_mb} MB; {self.memory.oom_kills} process(es) killed): exit {rc}: {command}"
            )
        for command, rc in zip(self.commands, self.returncodes):
            if rc != 0:
                last = self.stderr_tail.strip().splitlines()[-1:] or [""]
                return f"command exited {rc}: {command}" + (f" ({last[0][:200]})" if last[0] else "")
        return None


def _both(first: MemoryUse | None, later: MemoryUse | None) -> MemoryUse | None:
    """Two invocations' memory as one: the larger peak, every kill."""
    if first is None or later is None:
        return first or later
    peaks = [p for p in (first.peak_mb, later.peak_mb) if p is not None]
    kills = first.oom_kills + later.oom_kills
    return later.model_copy(update={"peak_mb": max(peaks, default=None), "oom_kills": kills})


class Mounts(NamedTuple):
    """What a command may see. `writable`: folders it may write (everything else
    read-only where the backend can enforce it). `readonly`: files or folders inside
    writable ones that must stay read-only (protected files). `hidden`: paths made
    invisible (e.g. the original task repository holding hidden test data)."""

    writable: Sequence[Path]
    readonly: Sequence[Path]
    hidden: Sequence[Path]


class Sandbox(ABC):
    """The one interface: `run`; each backend implements `execute`."""

    name: str

    def __init__(self, settings: SandboxSettings | None = None):
        self.settings = settings or SandboxSettings(backend=self.name)

    def run(
        self,
        commands: Sequence[str],
        cwd: Path,
        timeout: float,
        env: Mapping[str, str] | None = None,
        writable: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
    ) -> CommandsResult:
        """Run `commands` in order through bash in `cwd`, each with `timeout` seconds
        (see `Mounts`; with no `writable`, only `cwd` is writable)."""
        return self.execute(commands, Path(cwd), timeout, env, Mounts(writable or [Path(cwd)], readonly, hidden))

    def memory_enforcement(self) -> str:
        """What holds `memory_mb` here: a cgroup (v2/v1, counting tmpfs and shared memory) or a rlimit."""
        return memory_enforcement()

    @abstractmethod
    def execute(
        self, commands: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None, mounts: Mounts
    ) -> CommandsResult: ...


def allowed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Locale and time zone from the host, plus `extra` (what we set); nothing else."""
    host = {k: v for k, v in os.environ.items() if k in _HOST_ALLOWED and _HOST_ALLOWED[k].fullmatch(v)}
    return {**host, **(extra or {})}


def passed_env(names: Sequence[str]) -> dict[str, str]:
    """The host variables a task names on purpose (those that are set)."""
    return {name: os.environ[name] for name in names if name in os.environ}


def resolved(paths: Sequence[Path]) -> list[Path]:
    return [Path(p).resolve() for p in paths]


def to_cover(hidden: Sequence[Path], shown: Sequence[Path | str]) -> list[Path]:
    """The hidden paths that exist inside something shown (the others are out of sight anyway)."""
    return [p for p in resolved(hidden) if p.exists() and any(p.is_relative_to(s) for s in shown)]


class OutputRing:
    """A captured stream, bounded: the last bytes it wrote (a ring of `keep` bytes, in
    memory) and how many bytes it wrote in all. Nothing of it lands in a host file."""

    def __init__(self, keep: int = TAIL_CHARS * 4):
        self.keep, self.total, self._buffer = keep, 0, bytearray()

    def write(self, data: bytes) -> None:
        self.total += len(data)
        self._buffer += data[-self.keep :]
        if len(self._buffer) > 2 * self.keep:
            del self._buffer[: -self.keep]

    def text(self, limit: int = TAIL_CHARS) -> str:
        """The last `limit` characters (`total` says how long the stream was)."""
        return bytes(self._buffer[-self.keep :]).decode("utf-8", errors="replace")[-limit:]


def run_each(
    commands: Sequence[str],
    run_one: Callable[[str], tuple[int, bool]],
    timeout: float,
    out: OutputRing,
    err: OutputRing,
    backend: str,
) -> CommandsResult:
    """Run commands one by one with `run_one` (return code, timed out) until the first
    failure; `out` and `err` are the rings their output went to."""
    start = time.monotonic()
    returncodes: list[int] = []
    timed_out = False
    for command in commands:
        rc, timed_out = run_one(command)
        returncodes.append(rc)
        if timed_out:
            err.write(f"\n[sandbox] timed out after {timeout:g}s: {command}\n".encode())
        if timed_out or rc != 0:
            break
    return CommandsResult(
        commands=list(commands),
        returncodes=returncodes,
        stdout_tail=out.text(),
        stderr_tail=err.text(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        backend=backend,
    )
