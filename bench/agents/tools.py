"""The tools the model-driven baselines call, and one loop that runs them.

File tools go through the workspace's role-scoped API (`agent` role: read
task/, submission/, scratch/; write the editable files and scratch/). Paths are
relative to the run folder, e.g. `submission/train.py`. `bash` runs in the
sandbox with only submission/ and scratch/ writable, protected files read-only
and the task's original repository (hidden test assets) invisible.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from aiscientist.llm.types import BudgetExhausted
from aiscientist.tool_guard import crash_report, unencodable
from aiscientist.workspace.errors import ToolError
from bench.agents.base import RunContext

MAX_OUTPUT = 6000


def schema(name: str, description: str, **params: tuple[str, str]) -> dict[str, Any]:
    """An OpenAI function schema; params are name -> (json type, description);
    a description starting with "optional" makes the parameter optional."""
    properties = {k: {"type": t, "description": d} for k, (t, d) in params.items()}
    required = [k for k, (_, d) in params.items() if not d.startswith("optional")]
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {"type": "object", "properties": properties, "required": required}}}


READ_FILE = schema("read_file", "Read lines of a file (path relative to the run folder, e.g. submission/train.py).", path=("string", "file path"), start_line=("integer", "optional first line, 1-based"), max_lines=("integer", "optional number of lines"))
WRITE_FILE = schema("write_file", "Replace the whole content of an editable file.", path=("string", "file path"), content=("string", "new content"))
EDIT_FILE = schema("edit_file", "Replace one exact occurrence of `old` by `new` in an editable file.", path=("string", "file path"), old=("string", "exact text to replace"), new=("string", "replacement"))
LIST_FILES = schema("list_files", "List files under a folder of the run folder.", path=("string", "optional folder, default ."))
RUN_EXPERIMENT = schema("run_experiment", "Run the task's experiment commands on the current code; counts one step; returns the metric or the error.", hypothesis=("string", "what this run tests"))
FINISH = schema("finish", "End this turn (the code is ready to run, or you are done).", summary=("string", "short summary"))
BASH = schema("bash", "Run a bash command in submission/ (sandboxed; only submission/ and scratch/ are writable).", command=("string", "the command"))
READ_FILE_CHUNK = schema("read_file_chunk", "Read `n` lines of a file starting at line `start` (1-based).", path=("string", "file path relative to the run folder"), start=("integer", "optional first line"), n=("integer", "optional number of lines"))
SEARCH_FILE = schema("search_file", "Search for a regular expression in files under a path.", path=("string", "file or folder relative to the run folder"), pattern=("string", "regular expression"))
SUBMIT = schema("submit", "Declare the work finished; ends the run.", reason=("string", "optional why"))

FILE_TOOLS = [READ_FILE, WRITE_FILE, EDIT_FILE, LIST_FILES]


def step_report(record: Any, metric_label: str) -> str:
    """What an agent is told about one experiment step."""
    if record.success:
        extra = " (constraint violated: not eligible)" if record.constraint_violated else ""
        return f"step {record.step}: {metric_label} = {record.metric:.6g}{extra}"
    return f"step {record.step}: FAILED: {record.error}"


class Toolbox:
    """Executes tool calls for one agent; unusable calls come back as tool errors."""

    def __init__(self, ctx: RunContext, offered: list[dict[str, Any]]):
        self.ctx = ctx
        self.offered = {t["function"]["name"] for t in offered}
        self.scope = ctx.ws.scope("agent")
        self.submitted = False
        self.finished: str | None = None
        self.last_record: Any = None
        self.handlers: dict[str, Callable[..., str]] = {
            "read_file": self.read_file,
            "write_file": lambda path, content: self._ok(self.scope.write(path, content), f"wrote {path}"),
            "edit_file": lambda path, old, new: self._ok(self.scope.edit(path, old, new), f"edited {path}"),
            "list_files": lambda path=".": "\n".join(self.scope.list(path)) or "(empty)",
            "run_experiment": self.run_experiment,
            "finish": self.finish,
            "bash": self.bash,
            "read_file_chunk": lambda path, start=1, n=100: self.read_file(path, start, n),
            "search_file": lambda path, pattern: "\n".join(self.scope.search(pattern, path)[:100]) or "(no match)",
            "submit": self.submit,
        }

    @staticmethod
    def _ok(_: Any, message: str) -> str:
        return message

    def read_file(self, path: str, start_line: int = 1, max_lines: int = 200) -> str:
        return self.scope.read(path, start_line=start_line, max_lines=max_lines)

    def run_experiment(self, hypothesis: str = "") -> str:
        record = self.ctx.run_step(hypothesis or "(no hypothesis given)")
        self.last_record = record
        label = self.ctx.task.metric.label if self.ctx.task.metric else "metric"
        return json.dumps({"step": record.step, "success": record.eligible and record.metric is not None, "metric": record.metric, "error": record.error, "steps_left": self.ctx.steps_left(), "summary": step_report(record, label)})

    def finish(self, summary: str = "") -> str:
        self.finished = summary or "done"
        return "ok"

    def submit(self, reason: str = "") -> str:
        self.submitted = True
        return "submitted"

    def bash(self, command: str) -> str:
        ws, task = self.ctx.ws, self.ctx.task
        submission = ws.paths.submission
        result = ws.engine.sandbox.run(
            [command],
            cwd=submission,
            timeout=min(task.command_timeout_s, 600.0),
            env=ws.engine.env,
            writable=[submission, ws.paths.scratch],
            readonly=[submission / rel for rel in ws.engine.protected_manifest()],
            hidden=[*task.agent_hidden_paths(), ws.paths.pristine],
        )
        out = (result.stdout_tail + ("\n[stderr]\n" + result.stderr_tail if result.stderr_tail.strip() else "")).strip()
        status = "timed out" if result.timed_out else f"exit {result.returncodes[-1] if result.returncodes else '?'}"
        return f"[{status}]\n{out[-MAX_OUTPUT:]}"

    def call(self, name: str, arguments: dict[str, Any], error: str | None = None) -> str:
        """Run one tool call; any problem is returned as a tool error text."""
        from bench.agents.base import StepBudgetExhausted

        if error is not None:
            return f"ERROR: {error}"
        handler = self.handlers.get(name) if name in self.offered else None
        if handler is None:
            return f"ERROR: unknown tool {name!r}; available: {', '.join(sorted(self.offered))}"
        bad = unencodable(arguments)
        if bad:
            return f"ERROR: bad arguments for {name}: {bad}"
        try:
            inspect.signature(handler).bind(**arguments)
        except TypeError as err:
            return f"ERROR: bad arguments for {name}: {err}"
        try:
            return str(handler(**arguments))[:MAX_OUTPUT]
        except (StepBudgetExhausted, BudgetExhausted):
            raise
        except ToolError as err:  # the workspace's refusals and the agent's own mistakes
            return f"ERROR: {type(err).__name__}: {err}"
        except Exception as err:  # a bug or an odd input nobody foresaw: recorded, never the end of the run
            message, payload = crash_report(name, err)
            self.ctx.ws.events.record(self.scope.role, "tool.crashed", payload)
            return f"ERROR: {message}"

    def answer(self, completion: Any) -> list[dict[str, Any]]:
        """Tool messages answering every call of one completion."""
        return [
            {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": self.call(call.name, call.arguments, call.error)}
            for call in completion.tool_calls
        ]


def system_prompt(role: str, text: str) -> dict[str, str]:
    """Every agent's system prompt starts with `ROLE: <role>` (the offline policies key on it)."""
    return {"role": "system", "content": f"ROLE: {role}\n{text.strip()}"}
