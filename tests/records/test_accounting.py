"""Properties of the one accounting module on constructed trajectories, and agreement of
everything that reports a run (result.json, the bench summary) with it."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aiscientist.experiment.finish import summarize_run
from aiscientist.llm.budget import BudgetTracker
from aiscientist.llm.config import BudgetLimits
from aiscientist.records.accounting import (
    best_so_far,
    best_step,
    call_usage,
    is_better,
    signed_gain,
    successful,
    totals,
)
from aiscientist.records.step import StepRecord
from aiscientist.task import load_task
from bench.scoring.metrics import summarize_steps

TASK = load_task(Path(__file__).resolve().parents[2] / "tests/fixtures/tiny/task.yaml")  # direction min


def record(
    step: int, metric: float | None, success: bool, valid: bool, violated: bool, tokens: int, cost: float
) -> StepRecord:
    return StepRecord(
        step=step,
        agent="a",
        hypothesis="h",
        started_at="t",
        commands=["c"],
        returncodes=[0 if success else 1],
        duration_s=1.0,
        backend="local",
        metric=metric,
        success=success,
        valid=valid,
        constraint_violated=violated,
        diff_path="d",
        code_path="c",
        tokens=tokens,
        cost=cost,
    )


values = st.one_of(st.none(), st.integers(-50, 50).map(float))  # small integers: ties happen
trajectories = st.lists(
    st.tuples(values, st.booleans(), st.booleans(), st.booleans(), st.integers(0, 10_000), st.floats(0, 5)), max_size=12
).map(lambda rows: [record(i + 1, *row) for i, row in enumerate(rows)])
directions = st.sampled_from(["max", "min"])


@settings(max_examples=200, deadline=None)
@given(trajectories, directions)
def test_best_step_is_the_earliest_best_successful_step(steps: list[StepRecord], direction: str):
    best = best_step(steps, direction)
    good = [s for s in steps if successful(s)]
    if not good:
        assert best is None
        return
    assert best is not None and successful(best)
    assert not any(is_better(s.metric, best.metric, direction) for s in good)
    assert all(s.step >= best.step for s in good if s.metric == best.metric)
    flipped = [s.model_copy(update={"metric": -s.metric if s.metric is not None else None}) for s in steps]
    assert best_step(flipped, "min" if direction == "max" else "max").step == best.step


@settings(max_examples=200, deadline=None)
@given(trajectories, directions)
def test_best_so_far_never_gets_worse_and_ends_at_the_best(steps: list[StepRecord], direction: str):
    curve = best_so_far(steps, direction)
    assert len(curve) == len(steps)
    known = [v for v in curve if v is not None]
    assert all(
        not is_better(earlier, later, direction) for later, earlier in zip(known[1:], known)
    )  # never worse than before
    best = best_step(steps, direction)
    assert (curve[-1] if curve else None) == (best.metric if best else None)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), directions)
def test_gain_is_positive_exactly_when_better(value: float, baseline: float, direction: str):
    assert (signed_gain(value, baseline, direction) > 0) == is_better(value, baseline, direction)


@settings(max_examples=100, deadline=None)
@given(trajectories)
def test_result_json_and_bench_summary_agree_with_accounting(steps: list[StepRecord]):
    result, summary, counts = summarize_run(TASK, "a", steps), summarize_steps(steps, "min"), totals(steps)
    best = best_step(steps, "min")
    assert result.best_step == summary["best_step"] == (best.step if best else None)
    assert result.best_metric == summary["best_val"]
    assert (
        result.steps_successful
        == summary["successful"]
        == counts.successful
        == sum(s.eligible and s.metric is not None for s in steps)
    )
    assert result.tokens == summary["tokens"] == sum(s.tokens for s in steps)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ok", "error", "budget_exhausted"]),
            st.integers(0, 1000),
            st.integers(0, 1000),
            st.floats(0, 1),
        )
    )
)
def test_call_usage_counts_calls_and_the_budget_tracker_agrees(tmp_path_factory, rows):
    records = [
        {"outcome": o, "prompt_tokens": p, "completion_tokens": c, "cost": cost, "run_elapsed_s": i}
        for i, (o, p, c, cost) in enumerate(rows)
    ]
    made = [(o, p, c, x) for o, p, c, x in rows if o != "budget_exhausted"]  # a budget refusal is not a call
    usage = call_usage(records)
    assert (usage.calls, usage.answered) == (len(made), sum(o == "ok" for o, *_ in made))
    assert usage.tokens == sum(p + c for _, p, c, _ in made) and abs(usage.cost - sum(x for *_, x in made)) < 1e-9
    assert usage.wall_time_s == max(range(len(rows)), default=0)
    log = tmp_path_factory.mktemp("run") / "llm_calls.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"torn": ')
    used = BudgetTracker(BudgetLimits(), log).used()
    assert (used.calls, used.tokens) == (usage.calls, usage.tokens) and abs(used.cost - usage.cost) < 1e-9


@settings(max_examples=25, deadline=None)
@given(trajectories)
def test_the_run_context_keeps_step_records_and_best_step_as_the_folders_grow(steps: list[StepRecord]):
    """RunContext reads step folders incrementally and folds the final records into its
    best once: after each new step.json, and after the watcher rewrites the newest
    record, it answers exactly as reading every folder afresh does."""
    import tempfile

    from aiscientist.agent.context import RunContext
    from aiscientist.records.step import load_steps
    from aiscientist.workspace import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.create(TASK, Path(tmp) / "run", sandbox="local")
        ctx = RunContext(agent="linear", ws=ws, model="offline", steps=len(steps))
        for rec in steps:
            folder = ws.paths.step_dir(rec.step)
            folder.mkdir(parents=True)
            (folder / "step.json").write_text(rec.model_dump_json())
            if rec.step % 3 == 0:  # the watcher marks the newest step invalid after it was read
                assert ctx.step_records()[-1] == rec
                (folder / "step.json").write_text(rec.model_copy(update={"valid": False}).model_dump_json())
            on_disk = load_steps(ws.paths)
            assert ctx.step_records() == on_disk
            assert ctx.best_step() == best_step(on_disk, "min")
            assert ctx.best_step(before=rec.step) == best_step([s for s in on_disk if s.step < rec.step], "min")
