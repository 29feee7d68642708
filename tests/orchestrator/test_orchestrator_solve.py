"""`solve` end to end with the offline model: the CLI, both ablation arms, thin state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from aiscientist.agent.outcome import StopReason
from aiscientist.config import load_config
from aiscientist.experiment import snapshots
from aiscientist.orchestrator import solve
from aiscientist.records.paths import RunPaths
from aiscientist.resources import CONFIGS_DIR
from aiscientist.task import load_task
from aiscientist.util import notices
from aiscientist.workspace import verify_run

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"
ABLATIONS = CONFIGS_DIR / "ablations"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aiscientist", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "logs" / "events.jsonl").read_text().splitlines()]


def test_solve_cli_offline_five_steps(tmp_path):
    run_dir = tmp_path / "run"
    launched = time.time()
    done = _cli("solve", str(TINY), "--model", "offline", "--steps", "5", "--run-dir", str(run_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "best quadratic/mse" in done.stdout and "5/5/5" in done.stdout
    assert "first experiment after" in done.stdout and "experiments per hour" in done.stdout

    analysis = (run_dir / "paper_analysis" / "summary.md").read_text()
    assert "## Targets and metrics" in analysis and "quadratic/mse" in analysis
    plan = (run_dir / "plan" / "prioritized_tasks.md").read_text()
    assert plan.count("- change: ") >= 3 and "EPOCHS" in plan
    assert sorted(p.name for p in (run_dir / "experiments").iterdir()) == [f"step_000{n}" for n in range(1, 6)]
    exp_log = (run_dir / "logs" / "exp_log.md").read_text()
    assert all(exp_log.count(f"[step 000{n}]") == 1 for n in range(1, 6))
    assert verify_run(run_dir).clean
    assert _cli("verify", str(run_dir), cwd=tmp_path).returncode == 0

    result = json.loads((run_dir / "result.json").read_text())
    assert (
        result["agent"] == "aiscientist"
        and result["config"]["file_bus"] is True
        and result["config"]["hierarchy"] is True
    )
    assert (result["steps_total"], result["steps_completed"]) == (5, 5)
    steps = [json.loads((run_dir / "experiments" / f"step_000{n}" / "step.json").read_text()) for n in range(1, 6)]
    best = min((s for s in steps if s["success"]), key=lambda s: s["metric"])
    assert result["best_step"] == best["step"] and result["best_metric"] == best["metric"]
    assert result["test"]["step"] == best["step"] and result["test"]["success"]
    assert result["stop_reason"] == "submitted" and result["tokens"] > 0
    # TTFE: from the command's start (the process's, before any import) to the end of step 1
    first_end = datetime.fromisoformat(steps[0]["started_at"]).timestamp() + steps[0]["duration_s"]
    assert first_end - launched - 1.0 <= result["ttfe_s"] <= first_end - launched + 0.05
    assert result["experiments_per_hour"] == round(5 * 3600 / result["wall_time_s"], 3)
    # thin control: the recent-turn window grows to four turns and drops back to two (a prefix cache reuses
    # the prompts in between), so the orchestrator's prompt stops growing; offline: measure + next change per decision
    prompts = [e["payload"]["prompt_tokens"] for e in _events(run_dir) if e["kind"] == "orchestrator.decision"]
    assert len(prompts) == 6 and max(prompts[3:]) <= 1.3 * prompts[2] and prompts[5] < prompts[4], prompts
    # the best code is kept as a git tag when a step beats the baseline and every earlier step
    if best["metric"] < result["baseline"]:
        tag = snapshots.text_of(RunPaths(run_dir), snapshots.BEST_TAG, "config.py")
        assert tag == (run_dir / "experiments" / f"step_{best['step']:04d}" / "code" / "config.py").read_text()


def test_no_file_bus_arm_passes_outputs_through_the_conversation(tmp_path):
    config = load_config([ABLATIONS / "no_file_bus.yaml"], ["sandbox=local"])
    result = solve(load_task(TINY), tmp_path / "run", config, model="offline", steps=3)
    assert result.agent == "aiscientist-nobus" and result.config["file_bus"] is False
    assert result.steps_total == 3 and verify_run(tmp_path / "run").clean
    starts = {
        e["payload"]["specialist"]: e["payload"] for e in _events(tmp_path / "run") if e["kind"] == "specialist.start"
    }
    # comprehension's analysis reached prioritization only through the call's arguments
    assert starts["prioritization"]["arguments"]["context"].startswith("[comprehension: done")
    # without the bus the conversation is the carrier: the prompt grows with every decision
    prompts = [e["payload"]["prompt_tokens"] for e in _events(tmp_path / "run") if e["kind"] == "orchestrator.decision"]
    assert all(later > earlier for earlier, later in zip(prompts, prompts[1:-1])), prompts
    assert not [e for e in _events(tmp_path / "run") if e["kind"] == "access.denied"]
    # and the areas really are closed: implementation may not read the plan
    from aiscientist.workspace import PermissionDenied, Workspace

    with pytest.raises(PermissionDenied):
        Workspace.open(tmp_path / "run").scope("implementation").read("plan/prioritized_tasks.md")


def test_a_conversation_that_outgrows_the_context_window_forgets_its_oldest_turns(tmp_path):
    window = 9000  # File-as-Bus off: the conversation outgrows this within a few steps
    models = tmp_path / "models.yaml"
    models.write_text(f"models:\n  offline:\n    context_window: {window}\n")
    config = load_config(
        [ABLATIONS / "no_file_bus.yaml"], ["sandbox=local", f"models_file={models}", "specialists.readers=[code]"]
    )
    shown: list[tuple[str, str]] = []
    with notices.listening(lambda kind, text: shown.append((kind, text))):
        result = solve(load_task(TINY), tmp_path / "run", config, model="offline", steps=10)
    assert result.stop_reason is StopReason.SUBMITTED and result.steps_total == 10, result.stop_detail
    events = _events(tmp_path / "run")
    trimmed = [e["payload"] for e in events if e["kind"] == "orchestrator.context_trimmed"]
    assert trimmed and all(t["forgot_turns"] >= 1 and t["tokens"] > window == t["limit"] for t in trimmed)
    assert [kind for kind, _ in shown].count("context") == len(trimmed)  # the person watching sees each one
    prompts = [e["payload"]["prompt_tokens"] for e in events if e["kind"] == "orchestrator.decision"]
    assert max(prompts) <= window and not [e for e in events if e["kind"] == "orchestrator.model_error"]
    assert verify_run(tmp_path / "run").clean


def test_flat_arm_runs_one_agent(tmp_path):
    config = load_config([ABLATIONS / "flat.yaml"], ["sandbox=local"])
    result = solve(load_task(TINY), tmp_path / "run", config, model="offline", steps=3)
    assert result.agent == "aiscientist-flat" and result.config["hierarchy"] is False
    assert result.steps_total == 3 and result.stop_reason is StopReason.SUBMITTED
    events = _events(tmp_path / "run")
    assert not [e for e in events if e["kind"] == "specialist.start"]
    assert {e["role"] for e in events if e["kind"] == "orchestrator.decision"} == {"flat"}
    assert verify_run(tmp_path / "run").clean
    # solving a finished run folder again returns its result; a larger budget reopens it
    assert solve(None, tmp_path / "run").model_dump() == result.model_dump()
    extended = solve(None, tmp_path / "run", steps=4)
    assert extended.steps_total == 4 and extended.config["steps"] == 4
    assert [p.name for p in sorted((tmp_path / "run" / "experiments").iterdir())][-1] == "step_0004"


def test_model_budget_exhausted_wraps_up_and_keeps_the_best(tmp_path):
    config = load_config([], ["sandbox=local", "max_tokens=40000", "specialists.readers=[code]"])
    result = solve(load_task(TINY), tmp_path / "run", config, model="offline", steps=20)
    assert result.stop_reason is StopReason.MODEL_BUDGET and result.stop_detail == "model budget exhausted (tokens)"
    assert 0 < result.steps_total < 20 and result.tokens <= 40000
    assert json.loads((tmp_path / "run" / "result.json").read_text())["stop_reason"] == result.stop_reason.value
    assert verify_run(tmp_path / "run").clean
