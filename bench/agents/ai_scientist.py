"""`ai-scientist`: The AI Scientist (v1)-style broad exploration. A model call proposes
ideas (JSON); each is explored from the baseline code: up to 5 runs, each prepared by a
coding turn (a short tool loop), each failed run followed by up to 4 fixes. Then new ideas,
seeing the titles tried. `RunPaths.agent_state` lets a run resume on its idea.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import step_report
from aiscientist.agent.loop import LoopSpec, run_loop
from aiscientist.agent.outcome import Outcome, StopReason, StopRun
from aiscientist.agent.registry import register_agent
from aiscientist.llm.facts import facts_line, task_facts
from aiscientist.llm.offline import PolicyContext, PolicyReply, search
from aiscientist.llm.offline.solo import editable, replay, unread_calls
from aiscientist.records.paths import in_submission, write_atomic
from aiscientist.util.text import quoted
from bench.agents.tools import baseline_toolbox, system_prompt

ROLE = "ai-scientist"
MAX_RUNS = 5
MAX_FIXES = 4
IDEAS_PER_CALL = 5
CODER_TURNS = 8

IDEA_INSTRUCTIONS = """
You are an ambitious AI researcher. Propose research ideas that could improve the
task's metric by changing the method in the editable files: new losses,
architectures, training schemes or algorithms, as well as simpler tuning. Make the
ideas different from each other and from those already tried. Answer with a JSON
list in a ```json block: [{"name": "short_snake_case", "title": "...",
"experiment": "what to change and how to test it"}].
"""

CODER_INSTRUCTIONS = f"""
You are the coding assistant of an AI researcher. Implement the requested
experiment by editing the editable files (paths are relative to the run folder,
e.g. {in_submission("train.py")}) with the file tools, then call `finish`. Do not run the
experiment yourself: it is run after you finish and you get its result.
"""


class Idea(BaseModel):
    name: str
    title: str
    experiment: str


class Progress(BaseModel):
    ideas: list[Idea] = []
    current: int = 0  # index of the idea being explored
    runs: int = 0  # experiment runs of the current idea (fixes excluded)
    history: list[str] = []  # results of the current idea's runs


def parse_ideas(text: str) -> list[Idea]:
    match = re.search(r"```(?:json)?\s*\n(.*?)```", text, re.S) or re.search(r"(\[.*\])", text, re.S)
    if not match:
        return []
    try:
        raw = json.loads(match.group(1))
    except json.JSONDecodeError:
        return []
    ideas = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and item.get("title"):
            ideas.append(
                Idea(
                    name=str(item.get("name") or item["title"])[:60],
                    title=str(item["title"]),
                    experiment=str(item.get("experiment", "")),
                )
            )
    return ideas


class AIScientist:
    name = "ai-scientist"
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        progress = self._load(ctx)
        failures_in_a_row = 0
        while ctx.steps_left() > 0:
            if progress.current >= len(progress.ideas):
                new = parse_ideas(ctx.complete(ROLE, self._idea_messages(ctx, progress)).content)
                if not new:
                    failures_in_a_row += 1
                    if failures_in_a_row >= 3:
                        return Outcome(stop=StopReason.AGENT_FAILED, detail="the model proposed no usable ideas")
                    continue
                failures_in_a_row = 0
                progress.ideas += new
                self._save(ctx, progress)
            idea = progress.ideas[progress.current]
            if progress.runs == 0:
                ctx.reset_to_baseline()
            record = self._code_and_run(ctx, idea, progress, fix=None)
            fixes = 0
            while not record.success and fixes < MAX_FIXES and ctx.steps_left() > 0:
                fixes += 1
                record = self._code_and_run(
                    ctx, idea, progress, fix=quoted(record.error or "failed", "experiment error", 1000)
                )
            label = ctx.task.metric.label if ctx.task.metric else "metric"
            progress.history.append(f"run {progress.runs + 1}: {step_report(record, label)}")
            progress.runs += 1
            if progress.runs >= MAX_RUNS or not record.success:
                progress.current, progress.runs, progress.history = progress.current + 1, 0, []
            self._save(ctx, progress)
        return Outcome(stop=StopReason.STEP_BUDGET)

    def _code_and_run(self, ctx: RunContext, idea: Idea, progress: Progress, fix: str | None):
        messages = [
            system_prompt(ROLE, CODER_INSTRUCTIONS),
            {"role": "user", "content": self._coder_prompt(ctx, idea, progress, fix)},
        ]
        coded = run_loop(
            lambda msgs, tools: ctx.complete(ROLE, msgs, tools),
            baseline_toolbox(ctx, ROLE),
            messages,
            LoopSpec(max_turns=CODER_TURNS),
        )
        if coded.stop is StopReason.MODEL_ERROR:
            raise StopRun(coded.stop, coded.detail)
        stage = f"fix of run {progress.runs + 1}" if fix else f"run {progress.runs + 1}"
        return ctx.run_step(
            f"ai-scientist idea {progress.current + 1} '{idea.title}', {stage}: {idea.experiment[:300]}"
        )

    @staticmethod
    def _coder_prompt(ctx: RunContext, idea: Idea, progress: Progress, fix: str | None) -> str:
        parts = [
            ctx.task.summary(),
            f"## Idea: {idea.title}\n{idea.experiment}",
            f"## Experiment run {progress.runs + 1} of at most {MAX_RUNS}",
        ]
        if progress.history:
            parts.append("## Results so far for this idea\n" + "\n".join(progress.history))
        if fix:
            parts.append(f"## The last run failed; fix it\n{fix}")
        else:
            parts.append(
                "Plan and implement the next experiment for this idea." if progress.history else "Implement the idea."
            )
        parts.append(f"Steps left: {ctx.steps_left()}")
        editable = [in_submission(rel) for rel in ctx.editable_files()]
        parts.append(
            facts_line(
                role=ROLE,
                idea=idea.model_dump(),
                run=progress.runs + 1,
                fix=bool(fix),
                **task_facts(ctx.task, editable),
            )
        )
        return "\n\n".join(parts)

    @staticmethod
    def _idea_messages(ctx: RunContext, progress: Progress) -> list[dict[str, Any]]:
        code = "\n\n".join(  # whole, as The AI Scientist shows experiment.py: this call has no tool to read on
            f"### {in_submission(rel)}\n```python\n{ctx.read_code(rel)}\n```" for rel in ctx.editable_files()
        )
        tried = "\n".join(f"- {i.title}" for i in progress.ideas) or "(none)"
        user = (
            f"{ctx.task.summary()}\n\n## Baseline code\n{code}\n\n"
            f"## Ideas already tried\n{tried}\n\nPropose {IDEAS_PER_CALL} new ideas.\n"
            + facts_line(
                role=ROLE,
                want=IDEAS_PER_CALL,
                tried=len(progress.ideas),
                **task_facts(ctx.task, [in_submission(rel) for rel in ctx.editable_files()]),
            )
        )
        return [system_prompt(ROLE, IDEA_INSTRUCTIONS), {"role": "user", "content": user}]

    @staticmethod
    def _load(ctx: RunContext) -> Progress:
        path = ctx.ws.paths.agent_state
        return Progress.model_validate_json(path.read_text()) if path.is_file() else Progress()

    @staticmethod
    def _save(ctx: RunContext, progress: Progress) -> None:
        write_atomic(ctx.ws.paths.agent_state, progress.model_dump_json(indent=1))


def offline_policy(ctx: PolicyContext) -> PolicyReply:
    """Ideas (no tools): `want` new ideas after the `tried` ones; the coder turns idea n into a change of literal n."""
    if not ctx.tools:
        start, files = int(ctx.facts.get("tried", 0)), ", ".join(editable(ctx))
        ideas = [
            {
                "name": f"knob_{n}",
                "title": f"tune literal #{n} of the editable code",
                "experiment": f"Scale literal #{n} of {files} up or down; keep the better value.",
            }
            for n in range(start, start + int(ctx.facts.get("want", 3)))
        ]
        return PolicyReply("Ideas (blind tuning of literals):\n```json\n" + json.dumps(ideas, indent=1) + "\n```")
    contents = replay(ctx)
    unread = unread_calls(ctx, editable(ctx))
    if unread:
        return PolicyReply(f"Reading {', '.join(args['path'] for _, args in unread)}.", unread)
    if ctx.calls_to("edit_file"):
        return ctx.finish("Applied the idea's change.")
    idea = str((ctx.facts.get("idea") or {}).get("name", "knob_0"))
    n = int(idea.rsplit("_", 1)[-1]) if idea.rsplit("_", 1)[-1].isdigit() else 0
    names = list(dict.fromkeys(e.key for e in search.options_of(contents)))
    if not names:
        return ctx.finish("No tunable literal in the editable files; nothing changed.")
    key = names[n % len(names)]
    rng = ctx.rng("code", idea, ctx.facts.get("run"), ctx.facts.get("fix"))
    edit = rng.choice([e for e in search.options_of(contents) if e.key == key])
    return PolicyReply(f"Changing {edit.what}.", [("edit_file", edit.args())])


register_agent(
    ROLE, AIScientist, {ROLE: ("read_file", "write_file", "edit_file", "list_files", "finish")}, {ROLE: offline_policy}
)
