"""The one `run_experiment` tool every agent gets: it runs the task's commands on the
current code as one counted step and answers in text (specialists) or JSON (baselines and
external programs). A step's number is noted before it runs, so after a kill a finished
step is reused and an unfinished one redone; a new best is tagged `best`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from aiscientist.agent.context import RunContext
from aiscientist.agent.tools import Tool, Toolbox
from aiscientist.records.accounting import baseline_measurements, beats_baseline, progress
from aiscientist.records.paths import DIFF, STDERR, STDOUT, step_dir_name
from aiscientist.records.step import StepRecord
from aiscientist.util.text import quoted, quoted_block
from aiscientist.workspace.errors import ToolError

BEST_TAG = "best"


class RunExperimentArgs(BaseModel):
    hypothesis: str = Field("", description="what this run tests (the first 4,000 characters are kept)")


def run_step_once(ctx: RunContext, key: str, hypothesis: str) -> StepRecord:
    """Run one counted step; under a journal key (`key` not empty) a resumed run reuses it."""
    planned = ctx.journal.intent(key) if key else None
    if planned is not None:
        done = ctx.ws.paths.step_record(int(planned))
        if done.is_file():
            return StepRecord.model_validate_json(done.read_text())
    if ctx.steps_left() <= 0:
        raise ToolError(f"step budget reached ({ctx.steps_done()}/{ctx.steps} steps used): no more experiments")
    if key:
        ctx.journal.note_intent(key, ctx.ws.engine.next_step())
    record = ctx.run_step(hypothesis or "(no hypothesis given)")
    if improved(ctx, record):
        ctx.ws.engine.snapshot(BEST_TAG, f"step {record.step}: new best {record.metric}")
    return record


def improved(ctx: RunContext, record: StepRecord) -> bool:
    """`record` is a new best: no repeat, better than every earlier step and than the baseline
    (every measurement of the unchanged code when there is one, else the stated baseline)."""
    task = ctx.task
    if task.metric is None or record.metric is None or not progress(record):
        return False
    earlier = ctx.best_step(before=record.step)
    if earlier is not None and not task.metric.better(record.metric, earlier.metric):  # type: ignore[arg-type]
        return False
    return beats_baseline(record.metric, task.baseline, measured_baseline(ctx, record.step), task.metric.direction)


def measured_baseline(ctx: RunContext, before: int) -> list[float]:
    """The unchanged code's metric values known before step `before` (`accounting.baseline_measurements`)."""
    return baseline_measurements(ctx.task.baseline_runs, [s for s in ctx.step_records() if s.step < before])


def baseline_line(ctx: RunContext, record: StepRecord) -> str:
    """How the step compares with the baseline, measured (best value and spread) or stated; "" without one."""
    metric, value, measured = ctx.task.metric, record.metric, measured_baseline(ctx, record.step)
    if metric is None or value is None or (not measured and ctx.task.baseline is None):
        return ""
    better = "better" if beats_baseline(value, ctx.task.baseline, measured, metric.direction) else "not better"
    if not measured:
        return f"vs baseline {ctx.task.baseline}: {value - ctx.task.baseline:+.6g} ({better})"  # type: ignore[operator]
    best = min(measured) if metric.direction == "min" else max(measured)
    spread = f", noise (spread) {max(measured) - min(measured):.3g}" if len(measured) > 1 else ""
    return f"vs the baseline's code measured {best!r} (best of {len(measured)}{spread}): {value - best:+.6g} ({better})"


def step_report(record: StepRecord, metric_label: str) -> str:
    """One line about one step."""
    if record.success:
        extra = " (constraint violated: not eligible)" if record.constraint_violated else ""
        return f"step {record.step}: {metric_label} = {record.metric:.6g}{extra}"
    return f"step {record.step}: FAILED: {quoted(record.error, 'experiment error', 500)}"


def stderr_excerpt(ctx: RunContext, step: int | None, chars: int = 2000) -> str:
    """The tail of a step's stderr for a prompt, between labelled begin and end lines ("" if none)."""
    path = ctx.ws.paths.step_dir(step) / STDERR if step is not None else None
    text = path.read_text(errors="replace")[-chars:] if path is not None and path.is_file() else ""
    return quoted_block(text, f"stderr of step {step}") if text.strip() else ""


def step_result(record: StepRecord, steps_left: int) -> dict[str, Any]:
    """The JSON answer: the baselines' tool and the external agent's program read it."""
    return {
        "step": record.step,
        "success": record.eligible and record.metric is not None,
        "metric": record.metric,
        "error": record.error,
        "repeat_of": record.repeat_of,
        "steps_left": steps_left,
    }


def describe(ctx: RunContext, record: StepRecord) -> str:
    """The text answer, also what exp_log.md gets: the step against baseline, target and best."""
    task, metric = ctx.task, ctx.task.metric
    best = ctx.best_step()
    lines = [f"[step {record.step:04d}] hypothesis: {record.hypothesis[:300]}"]
    if record.success:
        label, direction = (metric.label, metric.direction) if metric else ("metric", "")
        lines.append(f"success: true; metric: {record.metric!r} ({label}, {direction})")
        lines += [line] if (line := baseline_line(ctx, record)) else []
        if task.target is not None:
            reached = record.metric is not None and metric is not None and not metric.better(task.target, record.metric)
            lines.append(f"target {task.target}: {'reached' if reached else 'not reached'}")
    else:
        lines.append(f"success: false; error: {quoted(record.error, 'experiment error', 1000)}")
    if record.constraint_violated:
        lines.append("constraint violated: this step cannot count as best")
    if not record.valid:
        lines.append("INVALID: protected files were changed during the run")
    if record.repeat_of is not None:
        again = f"step {record.repeat_of}'s" if record.repeat_of else "the baseline's"
        lines.append(f"repeat: the same editable files as {again}; not a new experiment")
    verdict = "new best" if improved(ctx, record) else ("failed" if not record.success else "no improvement")
    verdict = "repeat" if record.repeat_of is not None and record.success else verdict
    lines.append(f"verdict: {verdict}" + (f" (best so far: step {best.step}, metric {best.metric!r})" if best else ""))
    lines.append(f"details: {step_dir_name(record.step)}/ ({STDOUT}, {STDERR}, {DIFF})")
    return "\n".join(lines)


def experiment_tool(
    ctx: RunContext,
    box: Toolbox,
    render: Literal["text", "json"] = "json",
    limit: int | None = None,
    on_result: Callable[[StepRecord, str], None] | None = None,
) -> Tool:
    """At most `limit` runs through this toolbox; `on_result(record, answer)` sees each step."""
    runs: list[int] = []

    def run_experiment(args: RunExperimentArgs) -> str:
        if limit is not None and len(runs) >= limit:
            raise ToolError(f"this call may run {limit} experiment(s); finish and report")
        record = run_step_once(ctx, box.current_key, args.hypothesis)
        runs.append(record.step)
        if render == "text":
            answer = describe(ctx, record)
        else:
            label = ctx.task.metric.label if ctx.task.metric else "metric"
            answer = json.dumps({**step_result(record, ctx.steps_left()), "summary": step_report(record, label)})
        if on_result is not None:
            on_result(record, answer)
        return answer

    return Tool(
        "run_experiment",
        "Run the task's experiment commands on the current code; counts one step; returns the metric or the error.",
        RunExperimentArgs,
        run_experiment,
    )
