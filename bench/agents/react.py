"""Single-conversation tool loops over the kernel: `linear` (Claude-Code-style: refines its
own latest version), `basic` (PaperBench BasicAgent: ReAct, may submit early) and
`iterative` (PaperBench IterativeAgent: "take the next step" after every turn, no submit).
Older turns are dropped whole, so long runs stay within a context.
"""

from __future__ import annotations

from aiscientist.agent.context import RunContext
from aiscientist.agent.loop import LoopSpec, run_loop
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.registry import register_agent
from aiscientist.llm.facts import facts_line, task_facts
from aiscientist.llm.offline.solo import solo
from aiscientist.records.paths import SCRATCH, SUBMISSION, TASK, in_submission
from bench.agents.tools import baseline_toolbox, system_prompt

KEEP_MESSAGES = 40

LINEAR = f"""
You are an autonomous research engineer working alone in a repository. Improve the
task's metric by changing the method in the editable files (paths relative to the
run folder, e.g. {in_submission("train.py")}). Work in a single track: keep refining your
latest version, measure every change with run_experiment, and continue until the
step budget is spent.
"""

BASIC = f"""
You are an agent solving a machine-learning research task. Use bash (it runs in
{SUBMISSION}/, the repository; only {SUBMISSION}/ and {SCRATCH}/ are writable), read
files in chunks, search files, and run_experiment to measure the current code
(each call is one counted step). Think step by step, call one tool at a time and
submit when you are done or the steps run out.
"""

ITERATIVE = f"""
You are an agent solving a machine-learning research task, one small step at a
time. You have bash (in {SUBMISSION}/; only {SUBMISSION}/ and {SCRATCH}/ are writable),
read_file_chunk, and run_experiment (one counted step each). There is no submit:
keep working until the step budget is spent.
"""


class ReactAgent:
    """The subclasses differ only in tools (the table), prompts and when to continue."""

    name = "react"
    needs_model = True
    role = "react"
    instructions = ""
    proceed = ""  # the continue message
    continue_every_turn = False

    def solve(self, ctx: RunContext) -> Outcome:
        box = baseline_toolbox(ctx, self.role)
        messages = [system_prompt(self.role, self.instructions), {"role": "user", "content": self._task_message(ctx)}]
        spec = LoopSpec(
            max_turns=15 * ctx.steps + 20,
            nudge=lambda: f"{self.proceed} ({ctx.steps_left()} steps left)",
            nudge_every_turn=self.continue_every_turn,
            keep_messages=KEEP_MESSAGES,
            should_stop=lambda: Outcome(stop=StopReason.STEP_BUDGET) if ctx.steps_left() <= 0 else None,
        )
        return run_loop(lambda msgs, tools: ctx.complete(self.role, msgs, tools), box, messages, spec)

    def _task_message(self, ctx: RunContext) -> str:
        task, budget = ctx.task, f"Step budget: {ctx.steps_left()}"
        if task.kind == "reproduce":
            editable = []
            paper = f"The paper is at {TASK}/paper{task.paper.suffix}" if task.paper else "There is no paper file"
            commands = " ; ".join(task.commands)
            build = f"Build the reproduction in {SUBMISSION}/ with bash; run_experiment runs: {commands}."
            prose = f"{task.summary()}\n\n{paper}; see {TASK}/ for the rest. {build}\n{budget}"
        else:
            editable = [in_submission(f) for f in ctx.editable_files()]
            prose = f"{task.summary()}\n\nRun folder paths of the editable files: {', '.join(editable)}\n{budget}"
        return prose + "\n" + facts_line(role=self.role, steps_budget=ctx.steps_left(), **task_facts(task, editable))


class Linear(ReactAgent):
    name = role = "linear"
    instructions = LINEAR
    proceed = "Continue: refine your latest version, then run an experiment."


class Basic(ReactAgent):
    name = role = "basic"
    instructions = BASIC
    proceed = "Continue with the task using your tools; call submit when you are done."


class Iterative(ReactAgent):
    name = role = "iterative"
    instructions = ITERATIVE
    proceed = "Now take the next step: make one small change or check, using your tools."
    continue_every_turn = True


register_agent(
    "linear",
    Linear,
    {"linear": ("read_file", "write_file", "edit_file", "list_files", "run_experiment")},
    {"linear": lambda ctx: solo(ctx, revert=False)},
)
register_agent(
    "basic",
    Basic,
    {"basic": ("bash", "read_file_chunk", "search_file", "run_experiment", "submit")},
    {"basic": lambda ctx: solo(ctx, revert=False, bash=True)},
    kinds=("improve", "reproduce"),  # PaperBench's agents
)
register_agent(
    "iterative",
    Iterative,
    {"iterative": ("bash", "read_file_chunk", "run_experiment")},
    {"iterative": lambda ctx: solo(ctx, revert=False, bash=True)},
    kinds=("improve", "reproduce"),
)
