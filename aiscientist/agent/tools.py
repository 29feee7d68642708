"""Tools every agent calls, defined once: a pydantic argument model (its JSON schema is
what the model sees) and a handler. `Toolbox.call` turns a `ToolError` or an unexpected
crash (recorded as `tool.crashed`) into an `Error: ...` result: the run never crashes on
an agent's mistake.
"""

from __future__ import annotations

import functools
import json
import re
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from aiscientist.agent.outcome import StopRun
from aiscientist.llm.types import BudgetExhausted, ToolCall
from aiscientist.records.paths import in_submission
from aiscientist.util.paging import clip_lines
from aiscientist.util.substance import compile_error
from aiscientist.workspace.errors import ToolError

READ_LIMIT = 200
RESULT_CHARS = 12_000
NOTE_CHARS = 400  # room a page keeps for its closing note (`util.paging.Page.note`)
ASK_LESS = "ask for less (a narrower path or pattern, fewer lines, a shorter output)"
NARROW = "narrow the pattern or the path to see the others"
_SURROGATE = re.compile("[\ud800-\udfff]")


class ReadFileArgs(BaseModel):
    path: str = Field(description=f"path relative to the run folder, e.g. {in_submission('train.py')}")
    start_line: int = Field(1, ge=1)
    max_lines: int = Field(
        READ_LIMIT,
        ge=1,
        description="a result holds whole lines up to about 12,000 characters; when lines remain it ends with "
        "the call that reads on (its start_line) and how many lines remain",
    )


class WriteFileArgs(BaseModel):
    path: str
    content: str


class EditFileArgs(BaseModel):
    path: str
    old: str = Field(description="exact text to replace; must occur exactly once")
    new: str


class ListFilesArgs(BaseModel):
    path: str = "."


class SearchFilesArgs(BaseModel):
    pattern: str = Field(description="regular expression")
    path: str = "."


class AppendLogArgs(BaseModel):
    log: Literal["exp_log", "impl_log"]
    text: str


class FinishArgs(BaseModel):
    summary: str = Field(description="what you did and found, and the files you wrote")


class SubmitArgs(BaseModel):
    reason: str = Field("", description="why you stop now, and what the best result is")


class ReadChunkArgs(BaseModel):
    path: str = Field(description="file path relative to the run folder")
    start: int = Field(1, ge=1, description="first line, 1-based")
    n: int = Field(100, ge=1, description="number of lines")


class SearchFileArgs(BaseModel):
    path: str = Field(description="file or folder relative to the run folder")
    pattern: str = Field(description="regular expression")


@functools.cache
def _parameters(args: type[BaseModel]) -> str:
    """Cached: generating a JSON schema takes milliseconds."""
    parameters = args.model_json_schema()
    parameters.pop("title", None)
    for prop in parameters.get("properties", {}).values():
        prop.pop("title", None)
    return json.dumps(parameters)


def tool_schema(name: str, description: str, args: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI function schema of a tool (parameters a fresh copy: callers may not share one dict)."""
    function = {"name": name, "description": description, "parameters": json.loads(_parameters(args))}
    return {"type": "function", "function": function}


@dataclass
class Tool:
    """A tool the model is offered (its schema) and a handler of its validated arguments
    (the kernel's one tool type, re-exported by `aiscientist.agent`)."""

    name: str
    description: str
    args: type[BaseModel]
    handler: Callable[[Any], str]
    effect: bool = False  # changes the workspace: replayed from the journal on resume
    more: str = ASK_LESS  # how to see what a clipped result left out

    def schema(self) -> dict[str, Any]:
        return tool_schema(self.name, self.description, self.args)


@dataclass
class Toolbox:
    tools: dict[str, Tool] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    current_key: str = ""  # journal position of the call being run (see journal.journaled_call)
    record: Callable[[str, dict[str, Any]], Any] | None = None  # (kind, payload) -> event; set by file_tools
    result_chars: int = RESULT_CHARS  # the longest result; a file is shown in pages that fit it

    def add(self, *tools: Tool) -> Toolbox:
        for tool in tools:
            self.tools[tool.name] = tool
        return self

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def is_effect(self, name: str) -> bool:
        return name in self.tools and self.tools[name].effect

    def call(self, call: ToolCall) -> tuple[str, bool]:
        """(result text, ok)."""
        if call.error:
            return f"Error: {call.error}", False
        tool = self.tools.get(call.name)
        if tool is None:
            return f"Error: unknown tool {call.name!r}; available: {', '.join(self.tools)}", False
        bad = unencodable(call.arguments)
        if bad:
            return f"Error: bad arguments for {call.name}: {bad}", False
        try:
            args = tool.args.model_validate(call.arguments)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
            return f"Error: bad arguments for {call.name}: {where}: {first['msg']}", False
        try:
            result = tool.handler(args)
        except ToolError as err:
            return f"Error: {err}", False
        except (BudgetExhausted, StopRun):
            raise  # the run wraps up: not a failure of this tool
        except Exception as err:
            error = f"{type(err).__name__}: {err}"[:500].encode(errors="backslashreplace").decode()
            if self.record is not None:
                lines = "".join(traceback.format_exception(err)).strip().splitlines()[-6:]
                self.record("tool.crashed", {"tool": call.name, "error": error, "traceback": lines})
            return f"Error: the tool {call.name} failed unexpectedly: {error}", False
        return clip_lines(str(result), self.result_chars, tool.more), True

    def note(self, path: str) -> None:
        if path not in self.artifacts:
            self.artifacts.append(path)


def unencodable(arguments: dict[str, Any]) -> str | None:
    """Where arguments hold a lone surrogate (models send `\\udc80` in JSON), said for the model; None if clean."""
    stack: list[tuple[str, Any]] = [(k, v) for k, v in arguments.items()]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack += [(f"{where}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        for text in (where, value):
            found = _SURROGATE.search(text) if isinstance(text, str) else None
            if found:
                name = ascii(where)[1:-1]
                return (
                    f"{name}: a lone surrogate {ascii(found.group())} at character {found.start()}; send valid "
                    "Unicode text"
                )
    return None


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 40] + f"\n... [{len(text) - limit + 40} more characters cut]"


def python_warning(path: str, text: Callable[[], str]) -> str:
    """A Python file that no longer parses, said at once: a small model wrote a docstring's
    quotes as its string's and learnt of it only from a failed experiment step. `text` is
    only read for a `.py` path."""
    why = compile_error(path, text()) if path.endswith(".py") else None  # cached: an undone edit's text recurs
    return f"\nWarning: {path} is not valid Python now ({why}); fix it before running." if why is not None else ""


def flush_left(path: str, text: str) -> tuple[str, str]:
    """A Python file sent with every line indented alike (the 1.5B model wrote config.py so in 21 of a
    1,200 s run's 28 steps, each an IndentationError) is written without that indentation when only that
    makes it valid; the text and what was done ("" when nothing was)."""
    if compile_error(path, text) is None:
        return text, ""
    flush = textwrap.dedent(text)
    if flush == text or compile_error(path, flush) is not None:
        return text, ""
    return flush, " without the indentation all its lines shared (as sent it was not valid Python)"


NOT_FOUND = "old text not found"  # workspace.scope's words


def elsewhere(scope: Any, a: EditFileArgs) -> list[str]:
    """The other files of the edit's folder the role may change that hold the old text's first line (the 1.5B
    model edited train.py for a constant of config.py ten times, told where it was: one such file gets the edit)."""
    first = next((line.strip() for line in a.old.splitlines() if line.strip()), "")
    folder = a.path.rsplit("/", 1)[0] if "/" in a.path else "."
    try:
        hits = scope.search(re.escape(first), folder) if first else []
    except ToolError:
        return []
    found = {hit.split(":", 1)[0] for hit in hits} - {a.path}
    return sorted(f for f in found if scope.policy.refusal("write", f) is None)[:3]  # files it may change


def file_tools(scope: Any, box: Toolbox) -> list[Tool]:
    """Every file tool bound to `scope` (the table picks each agent's); crashes are recorded in its log."""
    if box.record is None:
        box.record = lambda kind, payload: scope.ws.events.record(scope.role, kind, payload)

    def page(tool: str, path: str, start: int, lines: int, start_arg: str = "start_line") -> str:
        found = scope.read_page(path, start, lines, max(200, box.result_chars - NOTE_CHARS))
        if found.text:
            return found.shown(tool, path, start_arg)
        return f"({path} has {found.total if found.total is not None else 'many'} lines: none from line {start})"

    def read(a: ReadFileArgs) -> str:
        return page("read_file", a.path, a.start_line, a.max_lines)

    def listing(a: ListFilesArgs) -> str:
        return "\n".join(scope.list(a.path)) or f"({a.path} is empty)"

    def search(a: SearchFilesArgs) -> str:
        return "\n".join(scope.search(a.pattern, a.path)) or "(no matches)"

    def write_file(a: WriteFileArgs) -> str:
        content, note = flush_left(a.path, a.content)
        scope.write(a.path, content)
        box.note(a.path)
        return f"wrote {a.path} ({len(content)} characters){note}" + python_warning(a.path, lambda: content)

    def edit_file(a: EditFileArgs) -> str:
        path, moved = a.path, ""
        try:
            scope.edit(a.path, a.old, a.new)
        except ToolError as err:
            found = elsewhere(scope, a) if str(err).endswith(NOT_FOUND) else []
            if len(found) != 1:
                raise ToolError(f"{err}; its first line is in {', '.join(found)}" if found else str(err)) from err
            path, moved = found[0], f" (the old text is there, not in {a.path})"
            scope.edit(path, a.old, a.new)  # its own error if the whole old text is not there exactly once
        box.note(path)
        return f"edited {path}{moved}" + python_warning(path, lambda: scope.read(path, max_lines=None))

    def append_log(a: AppendLogArgs) -> str:
        scope.append(a.log, a.text)
        box.note(scope.policy.logs[a.log])
        return f"appended to {a.log}"

    def chunk(a: ReadChunkArgs) -> str:
        return page("read_file_chunk", a.path, a.start, a.n, start_arg="start")

    def search_file(a: SearchFileArgs) -> str:  # PaperBench's
        return "\n".join(scope.search(a.pattern, a.path)[:100]) or "(no match)"

    return [
        Tool("read_file", "Read lines of a file in the workspace.", ReadFileArgs, read),
        Tool("list_files", "List files under a workspace folder.", ListFilesArgs, listing),
        Tool(
            "search_files",
            "Search files for a regular expression; returns path:line: text.",
            SearchFilesArgs,
            search,
            more=NARROW,
        ),
        Tool("write_file", "Create or overwrite a file you may write.", WriteFileArgs, write_file, effect=True),
        Tool(
            "edit_file",
            "Replace one exact occurrence of `old` with `new` in a file.",
            EditFileArgs,
            edit_file,
            effect=True,
        ),
        Tool(
            "append_log",
            "Append an entry to exp_log or impl_log (append-only).",
            AppendLogArgs,
            append_log,
            effect=True,
        ),
        Tool("read_file_chunk", "Read `n` lines of a file starting at line `start` (1-based).", ReadChunkArgs, chunk),
        Tool(
            "search_file",
            "Search for a regular expression in files under a path.",
            SearchFileArgs,
            search_file,
            more=NARROW,
        ),
    ]


def finish_tool(description: str = "End your work and return a short summary to the orchestrator.") -> Tool:
    return Tool("finish", description, FinishArgs, lambda a: "finished")


def submit_tool(
    description: str = "End the run; the best validated step is kept.", refusal: Callable[[], str | None] | None = None
) -> Tool:
    """`refusal()` names why the run may not end yet (None: it may); a refused submit is a failed call."""

    def submit(args: SubmitArgs) -> str:
        why = refusal() if refusal else None
        if why:
            raise ToolError(f"submit refused: {why}")
        return "submitted"

    return Tool("submit", description, SubmitArgs, submit)
