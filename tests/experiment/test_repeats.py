"""A step whose editable files equal an earlier measured step's (or the baseline's) is a
repeat, never progress; a baseline written rounded, or a result within the baseline's own
measured noise, makes no "new best". Real sandboxed steps on the tiny task."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiscientist.agent.context import RunContext
from aiscientist.agent.experiment_tool import RunExperimentArgs, experiment_tool
from aiscientist.agent.tools import Toolbox
from aiscientist.experiment import snapshots
from aiscientist.experiment.engine import ExperimentEngine
from aiscientist.experiment.finish import measure_baseline, summarize_run
from aiscientist.records.accounting import beats_baseline, best_so_far, best_step
from aiscientist.records.step import load_steps
from aiscientist.task import load_task
from aiscientist.workspace import Workspace
from tests.experiment.test_experiment import make_engine
from tests.task.test_task import tiny_copy

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


def _set_rate(submission: Path, rate: str) -> None:
    config = submission / "config.py"
    text = config.read_text()
    config.write_text(
        "\n".join(f"LEARNING_RATE = {rate}" if line.startswith("LEARNING_RATE") else line for line in text.splitlines())
        + "\n"
    )


def test_identical_editable_files_make_a_repeat_that_is_never_progress(tmp_path: Path) -> None:
    task = load_task(TINY)
    engine, _ = make_engine(task, tmp_path / "run")
    sub = engine.paths.submission
    unchanged = engine.run_step("agent", "the code as it is")
    _set_rate(sub, "0.1")
    change = engine.run_step("agent", "raise the learning rate")
    _set_rate(sub, "0.05")
    back = engine.run_step("agent", "back to the baseline's value")
    (sub / "train.py").write_text("this is not python\n")
    broken = engine.run_step("agent", "broken code")
    retry = engine.run_step("agent", "the same broken code again")
    (sub / "train.py").write_bytes(_baseline(engine, "train.py"))
    _set_rate(sub, "0.1")
    again = ExperimentEngine(task, engine.paths, engine.sandbox).run_step("agent", "the change again, after a restart")
    assert (unchanged.repeat_of, back.repeat_of) == (0, 0)  # the baseline's own code: a measurement of it
    assert change.repeat_of is None and change.code_sha256 and change.metric < unchanged.metric
    assert not broken.success and retry.repeat_of is None  # a failed step was not measured: running it again is a retry
    assert again.step == 6 and again.repeat_of == change.step and again.success
    steps = load_steps(engine.paths)
    assert best_step(steps, task.metric_direction).step == change.step  # never a repeat, whatever its noise
    assert best_so_far(steps, "min") == [
        None,
        change.metric,
        change.metric,
        change.metric,
        change.metric,
        change.metric,
    ]
    assert summarize_run(task, "agent", steps[:1]).best_step is None  # unchanged code alone is no progress


def _baseline(engine: ExperimentEngine, rel: str) -> bytes:
    return snapshots.blob(engine.paths, snapshots.load(engine.paths, snapshots.BASELINE_TAG).files[rel])


def test_the_baseline_measurement_itself_is_no_repeat(tmp_path: Path) -> None:
    ws = Workspace.create(load_task(TINY), tmp_path / "run")
    record, result = measure_baseline(ws, test=False)
    assert record.repeat_of is None and result.best_step == 1


def _tool_run(tmp_path: Path, **changes: object) -> tuple[RunContext, str]:
    task = load_task(tiny_copy(tmp_path, **changes))
    ws = Workspace.create(task, tmp_path / "run")
    ctx = RunContext(agent="linear", ws=ws, model="offline", steps=3)
    tool = experiment_tool(ctx, Toolbox(), render="text")
    return ctx, tool.handler(RunExperimentArgs(hypothesis="the unchanged code"))


def test_a_rounded_baseline_is_not_beaten_by_unchanged_code(tmp_path: Path) -> None:
    ctx, answer = _tool_run(tmp_path, baseline=0.61)  # the measured 0.6072, written rounded
    record = ctx.step_records()[0]
    assert record.metric < 0.61 and record.repeat_of == 0
    assert "verdict: repeat" in answer and "new best" not in answer
    assert "the same editable files as the baseline's; not a new experiment" in answer
    assert ctx.best_step() is None and not snapshots.exists(ctx.ws.paths, snapshots.BEST_TAG)
    # a change is then measured against the unchanged code's own value, not the rounded one
    tool = experiment_tool(ctx, Toolbox(), render="text")
    _set_rate(ctx.ws.paths.submission, "0.1")
    changed = tool.handler(RunExperimentArgs(hypothesis="raise the learning rate"))
    assert (
        f"vs the baseline's code measured {record.metric!r} (best of 1)" in changed and "verdict: new best" in changed
    )


def test_a_result_within_the_baselines_measured_noise_is_no_new_best(tmp_path: Path) -> None:
    ctx, _ = _tool_run(tmp_path, baseline=0.6072, baseline_runs=[0.6072, 0.0001])  # a very noisy baseline
    tool = experiment_tool(ctx, Toolbox(), render="text")
    _set_rate(ctx.ws.paths.submission, "0.1")
    answer = tool.handler(RunExperimentArgs(hypothesis="raise the learning rate"))
    record = ctx.step_records()[-1]
    assert record.repeat_of is None and record.metric < 0.6072
    assert "(best of 3, noise (spread) 0.607)" in answer and "(not better)" in answer
    assert "verdict: no improvement" in answer


@pytest.mark.parametrize(
    ("value", "stated", "measured", "direction", "beats"),
    [
        (0.6072, 0.61, [], "min", True),  # only a stated number: compared as written
        (0.6072, 0.61, [0.6072], "min", False),  # the measured value wins over the rounded one
        (0.6069, 0.61, [0.6072], "min", True),
        (0.6069, None, [0.6072, 0.6060], "min", False),  # within the spread of two measurements: noise
        (0.6059, None, [0.6072, 0.6060], "min", True),
        (0.91, 0.9, [0.905, 0.92], "max", False),
        (0.5, None, [], "max", True),  # nothing to beat
    ],
)
def test_beats_baseline(value, stated, measured, direction, beats) -> None:
    assert beats_baseline(value, stated, measured, direction) is beats
