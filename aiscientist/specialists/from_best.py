"""Build on the best: a new change starts from the best measured code, not from a worse or broken one.

When the last experiment set no new best and the editable files are still as it ran them, implementation
(modes full and explore; a fix repairs what failed) first puts them back as the best step left them, or as
the baseline has them when no step beat it. Without it a small model changes the last version further: in
a 1,200 s run of the 1.5B model every change after step 1 built on the one before (the epochs fell 30, 25,
10, 3, 2 with the error rising) and an indentation error in config.py failed the last eight steps.
"""

from __future__ import annotations

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import BEST_TAG, improved
from aiscientist.experiment import integrity, snapshots
from aiscientist.experiment.repeats import code_digest

UNDONE = "The code is back to {source}: step {step} {what} and is undone."


def back_to_best(ctx: RunContext, role: str) -> str:
    """Put the editable files back to the best code when the latest step set no new best and nothing changed
    since it ran; what was done, in a sentence ("" when nothing was)."""
    task_metric = ctx.task.metric
    if task_metric is None:  # no metric, no best: built on
        return ""
    records = ctx.step_records()
    latest = records[-1] if records else None
    if latest is None or improved(ctx, latest) or not latest.code_sha256:
        return ""
    if code_digest(ctx.task, integrity.scan(ctx.submission)) != latest.code_sha256:
        return ""  # changed since it ran (an implementation not yet measured): built on
    tag = BEST_TAG if snapshots.exists(ctx.ws.paths, BEST_TAG) else ctx.ws.engine.BASELINE_TAG
    kept = {rel for rel in snapshots.load(ctx.ws.paths, tag).files if ctx.task.is_editable(rel)}
    snapshots.restore(ctx.ws.paths, tag, sorted(kept | set(ctx.editable_files())))  # one it lacks is removed
    best = ctx.best_step() if tag == BEST_TAG else None
    to = f"step {best.step}" if best else tag
    ctx.ws.events.record(role, "code.restored", {"after_step": latest.step, "to": to})
    label = task_metric.label
    source = f"step {best.step}'s, the best so far ({label} {best.metric:.6g})" if best else "the baseline's"
    what = "failed" if not latest.success or latest.metric is None else f"was no better ({label} {latest.metric:.6g})"
    return UNDONE.format(source=source, step=latest.step, what=what)
