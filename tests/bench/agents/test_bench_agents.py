"""The baselines not covered by the grid test, each for a couple of real steps on
the tiny task with the offline model, plus the sandbox boundary of the bash tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiscientist.records.cell import CellSummary
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from bench.agents import UnknownAgent, get_agent
from bench.grid.runner import GridConfig, RunSpec, execute_run

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "tests/fixtures/tiny/task.yaml"


def run_agent(
    out: Path, agent: str, steps: int = 2, model: str = "offline", judge_model: str | None = None, **options: str
) -> tuple[Path, dict]:
    config = GridConfig(
        agents=[agent],
        tasks=[TASK],
        rounds=1,
        steps=steps,
        model=model,
        judge_model=judge_model,
        options={agent: options} if options else {},
        embedder="minilm",
    )
    spec = RunSpec(task_path=TASK, task="tiny-quadratic", agent=agent, round=1)
    execute_run(spec, config, out)
    folder = spec.cell(out).root
    return folder / "ws", CellSummary.model_validate_json((folder / "result.json").read_text())


def test_ai_scientist_explores_ideas_from_the_baseline(tmp_path: Path):
    ws, result = run_agent(tmp_path, "ai-scientist", steps=2)
    steps = load_steps(RunPaths(ws))
    assert [s.agent for s in steps] == ["ai-scientist"] * 2 and result.result.steps_completed == 2
    progress = json.loads(RunPaths(ws).agent_state.read_text())
    assert progress["ideas"] and all(i["title"].startswith("tune ") for i in progress["ideas"])
    assert all(s.hypothesis.startswith("ai-scientist idea 1 ") for s in steps)
    snapshots = [(ws / s.code_path / "config.py").read_text() for s in steps]
    assert (ws / steps[0].diff_path).read_text() and snapshots[0] != snapshots[1]  # each run changed the code
    assert result.result.tokens > 0


@pytest.mark.parametrize("agent", ["basic", "iterative"])
def test_paperbench_agents_edit_through_sandboxed_bash(tmp_path: Path, agent: str):
    ws, result = run_agent(tmp_path, agent, steps=2)
    steps = load_steps(RunPaths(ws))
    assert len(steps) == 2 and all(s.success for s in steps)
    calls = [json.loads(line) for line in (ws / "logs/llm_calls.jsonl").read_text().splitlines()]
    assert {"bash", "read_file_chunk", "run_experiment"} <= {name for c in calls for name in c.get("tool_calls", [])}
    assert "config.py" in (ws / steps[0].diff_path).read_text()


def test_external_agent_steps_are_counted_by_the_wrapper(tmp_path: Path):
    script = (
        "sed -i 's/EPOCHS = 40/EPOCHS = 80/' config.py; run_experiment more epochs; run_experiment again; "
        "run_experiment third; echo exit=$? > ../scratch/third.txt; cat $AISCI_TASK_FILE > ../scratch/task.txt"
    )
    ws, result = run_agent(tmp_path, "external", steps=2, command=script)
    steps = load_steps(RunPaths(ws))
    assert [s.hypothesis for s in steps] == ["more epochs", "again"]
    assert (ws / "scratch/third.txt").read_text().strip() == "exit=3"  # the budget is enforced
    assert "Step budget: 2" in (ws / "scratch/task.txt").read_text()
    assert result.result.steps_completed == 2 and result.result.best_metric < 0.6072  # 80 epochs fit better than 40


def test_aiscientist_arm_runs_through_solve(tmp_path: Path):
    ws, result = run_agent(tmp_path, "aiscientist-flat", steps=2)
    assert json.loads((ws / "result.json").read_text())["agent"] == "aiscientist-flat"
    assert result.result.steps_completed == 2 and result.agent == "aiscientist-flat"
    assert (ws.parent / "models.yaml").is_file()


def test_unknown_agent_is_a_clear_error():
    with pytest.raises(
        UnknownAgent, match="unknown agent 'gpt-engineer'; choose one of adaptive-search, ai-scientist, "
    ):
        get_agent("gpt-engineer")


def test_pool_shape_and_worker_pinning():
    import functools
    import multiprocessing
    import os
    import subprocess
    from concurrent.futures import ProcessPoolExecutor

    from bench.grid.executors import pin_worker as _pin_worker
    from bench.grid.executors import pool_shape

    cpus = sorted(os.sched_getaffinity(0))
    workers, slots = pool_shape(n_runs=50, workers=None, cores_per_run=1)
    assert workers == len(cpus) and slots == [[c] for c in cpus]
    workers, slots = pool_shape(n_runs=1, workers=None, cores_per_run=None)
    assert workers == 1 and slots == [cpus]  # a lone run gets the whole machine

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    queue.put([cpus[-1]])
    probe = functools.partial(
        subprocess.check_output, ["bash", "-c", "nproc; echo $OMP_NUM_THREADS $MKL_NUM_THREADS"], text=True
    )
    with ProcessPoolExecutor(1, mp_context=context, initializer=_pin_worker, initargs=(queue,)) as pool:
        assert pool.submit(probe).result(timeout=120).split() == ["1", "1", "1"]  # experiments inherit the pinning


def test_paper_task_is_graded_against_its_rubric(tmp_path: Path):
    from bench.scoring.report import write_report

    paper = ROOT / "bench/papers/knn-scaling/task.yaml"
    config = GridConfig(agents=["basic"], tasks=[paper], rounds=1, steps=2, model="offline", embedder="minilm")
    spec = RunSpec(task_path=paper, task="knn-scaling", agent="basic", round=1)
    execute_run(spec, config, tmp_path)
    result = CellSummary.model_validate_json((spec.cell(tmp_path).root / "result.json").read_text())
    grade = json.loads((spec.cell(tmp_path).root / "grade/grade.json").read_text())
    assert result.kind == "reproduce" and result.rubric_score == grade["score"] and 0.0 <= grade["score"] <= 1.0
    step = load_steps(RunPaths(spec.cell(tmp_path).root / "ws"))[0]
    assert step.commands == ["bash reproduce.sh"] and not step.success  # the offline policy writes no reproduction
    write_report(tmp_path)
    assert "| knn-scaling | basic | 1 | 1 |" in (tmp_path / "report/rubric.md").read_text()


def test_basic_may_not_submit_before_its_code_was_measured(tmp_path: Path):
    """The 1.5B model's first reply was submit: refused while nothing is measured, then allowed."""
    submit = {"name": "submit", "arguments": {"reason": "done"}}
    script = [
        {"content": "", "tool_calls": [submit]},
        {"content": "", "tool_calls": [{"name": "run_experiment", "arguments": {"hypothesis": "baseline"}}]},
        {"content": "", "tool_calls": [submit]},
    ]
    (tmp_path / "basic.json").write_text(json.dumps(script))
    ws, result = run_agent(tmp_path, "basic", steps=3, model=f"scripted:{tmp_path / 'basic.json'}")
    assert result.result.stop_reason == "submitted" and len(load_steps(RunPaths(ws))) == 1  # the first submit ran on
    assert len((ws / "logs/llm_calls.jsonl").read_text().splitlines()) == 3
