"""Single-conversation tool loops: `linear`, `basic` and `iterative`.

- `linear` (Claude-Code-style): file tools plus run_experiment; it keeps refining
  its own latest version, never resetting to the baseline or to a best copy.
- `basic` (PaperBench BasicAgent): ReAct with bash, read_file_chunk, search_file,
  run_experiment and submit; a continue message when a reply has no tool call,
  a step reminder in every tool result; may submit early.
- `iterative` (PaperBench IterativeAgent): bash, read_file_chunk and
  run_experiment only; a "take the next step" prompt after every turn; no submit.

The conversation keeps the system prompt, the task message and the most recent
messages (older turns are dropped whole), so long runs stay within a context.
"""

from __future__ import annotations

from typing import Any

from bench.agents.base import RunContext
from bench.agents.tools import BASH, FILE_TOOLS, READ_FILE_CHUNK, RUN_EXPERIMENT, SEARCH_FILE, SUBMIT, Toolbox, system_prompt

KEEP_MESSAGES = 40

LINEAR = """
You are an autonomous research engineer working alone in a repository. Improve the
task's metric by changing the method in the editable files (paths relative to the
run folder, e.g. submission/train.py). Work in a single track: keep refining your
latest version, measure every change with run_experiment, and continue until the
step budget is spent.
"""

BASIC = """
You are an agent solving a machine-learning research task. Use bash (it runs in
submission/, the repository; only submission/ and scratch/ are writable), read
files in chunks, search files, and run_experiment to measure the current code
(each call is one counted step). Think step by step, call one tool at a time and
submit when you are done or the steps run out.
"""

ITERATIVE = """
You are an agent solving a machine-learning research task, one small step at a
time. You have bash (in submission/; only submission/ and scratch/ are writable),
read_file_chunk, and run_experiment (one counted step each). There is no submit:
keep working until the step budget is spent.
"""

CONTINUE = {
    "linear": "Continue: refine your latest version, then run an experiment.",
    "basic": "Continue with the task using your tools; call submit when you are done.",
    "iterative": "Now take the next step: make one small change or check, using your tools.",
}


class ReactAgent:
    """One tool loop; the subclasses differ only in tools, prompts and stopping."""

    name = "react"
    needs_model = True
    role = "react"
    instructions = ""
    tools: list[dict[str, Any]] = []
    continue_every_turn = False

    def solve(self, ctx: RunContext) -> str:
        toolbox = Toolbox(ctx, self.tools)
        head = [system_prompt(self.role, self.instructions), {"role": "user", "content": self._task_message(ctx)}]
        recent: list[dict[str, Any]] = []
        max_calls = 15 * ctx.assigned + 20
        for _ in range(max_calls):
            if ctx.steps_left() <= 0:
                return "step budget spent"
            completion = ctx.complete(self.role, head + recent, tools=self.tools)
            recent.append(completion.message)
            if completion.tool_calls:
                recent += toolbox.answer(completion)
                if toolbox.submitted:
                    return "submitted"
            if not completion.tool_calls or self.continue_every_turn:
                recent.append({"role": "user", "content": f"{CONTINUE[self.role]} ({ctx.steps_left()} steps left)"})
            recent = _trim(recent)
        return f"stopped after {max_calls} model calls"

    def _task_message(self, ctx: RunContext) -> str:
        if ctx.task.kind == "reproduce":
            paper = f"The paper is at task/paper{ctx.task.paper.suffix}" if ctx.task.paper else "There is no paper file"
            return f"{ctx.task.summary()}\n\n{paper}; see task/ for the rest. Build the reproduction in submission/ with bash; run_experiment runs: {' ; '.join(ctx.task.commands)}.\nStep budget: {ctx.steps_left()}"
        files = ", ".join(f"submission/{f}" for f in ctx.editable_files())
        return f"{ctx.task.summary()}\n\nRun folder paths of the editable files: {files}\nStep budget: {ctx.steps_left()}"


def _trim(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last KEEP_MESSAGES messages, starting at an assistant message (so no tool
    result is left without its call)."""
    if len(messages) <= KEEP_MESSAGES:
        return messages
    cut = len(messages) - KEEP_MESSAGES
    while cut < len(messages) and messages[cut].get("role") != "assistant":
        cut += 1
    return messages[cut:]


class Linear(ReactAgent):
    name = role = "linear"
    instructions = LINEAR
    tools = FILE_TOOLS + [RUN_EXPERIMENT]


class Basic(ReactAgent):
    name = role = "basic"
    instructions = BASIC
    tools = [BASH, READ_FILE_CHUNK, SEARCH_FILE, RUN_EXPERIMENT, SUBMIT]


class Iterative(ReactAgent):
    name = role = "iterative"
    instructions = ITERATIVE
    tools = [BASH, READ_FILE_CHUNK, RUN_EXPERIMENT]
    continue_every_turn = True
