"""peer-mini-swe-agent end to end on the tiny task: the released agent, a scripted
OpenAI-compatible server on a loopback socket, our sandbox and our experiment engine."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from bench.peers.specs import PeerEnvError, ensure
from tests.bench.agents.test_bench_agents import TASK, run_agent
from tests.bench.peers.loopback import ScriptedServer


def bash(thought: str, command: str) -> str:
    return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"


def run_peer(out: Path, agent: str, server: ScriptedServer, steps: int, **options: str) -> tuple[Path, dict]:
    """The loopback server is the run's model, reached by the peer's own client; the judge stays offline."""
    return run_agent(
        out,
        agent,
        steps,
        model="openai/scripted",
        judge_model="offline",
        api_base=server.api_base,
        api_key="sk-test",
        **{"timeout_s": "300", **options},  # a script that goes wrong ends the peer, not the test session
    )


def installed(name: str) -> bool:
    try:
        ensure(name)
    except PeerEnvError:
        return False
    return True


pytestmark = pytest.mark.skipif(not installed("mini-swe-agent"), reason="bench peers install mini-swe-agent")


def test_mini_swe_agent_edits_in_our_sandbox_and_our_engine_measures(tmp_path: Path):
    replies = [
        bash("Look at the code.", "cat config.py"),
        bash("More epochs should fit better.", "sed -i 's/EPOCHS = 40/EPOCHS = 120/' config.py && cat config.py"),
        bash("Measure it.", 'run_experiment "120 epochs instead of 40"'),
        bash("Change the referee.", "echo 'print(0)' > evaluate.py; echo y > /etc/peer_was_here; echo done"),
        bash("Finish.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    with ScriptedServer(replies) as server:
        ws, result = run_peer(tmp_path, "peer-mini-swe-agent", server, steps=3)
    steps = load_steps(RunPaths(ws))
    assert [s.agent for s in steps] == ["peer-mini-swe-agent"]
    assert steps[0].hypothesis == "120 epochs instead of 40" and steps[0].success
    assert "EPOCHS = 120" in (ws / steps[0].code_path / "config.py").read_text()
    assert steps[0].metric < 0.6072  # our engine's number: 120 epochs fit better than the baseline's 40
    assert result.result.steps_completed == 1 and result.result.best_metric == steps[0].metric
    assert steps[0].tokens == 3 * 120 and result.result.tokens == 5 * 120  # metered: 3 calls before the step, 5 in all
    assert result.has_test and result.result.test_metric is not None  # the hidden test ran on the best step
    assert result.result.stop_reason == "finished", result
    # the peer's first prompt carried the task; each later one the observation of our sandbox
    first = server.requests[0]["messages"][1]["content"]
    assert "config.py" in first and "run_experiment" in first
    assert "EPOCHS = 40" in server.requests[1]["messages"][-1]["content"]
    assert "EPOCHS = 120" in server.requests[2]["messages"][-1]["content"]
    assert "verdict: new best" in server.requests[3]["messages"][-1]["content"]  # our engine's answer
    assert "done" in server.requests[4]["messages"][-1]["content"]
    original = (TASK.parent / "repo/evaluate.py").read_text()
    assert (ws / "submission/evaluate.py").read_text() == original  # protected: read-only in the sandbox
    assert not Path("/etc/peer_was_here").exists()


def test_a_peer_that_never_evaluates_ends_with_a_stop_reason(tmp_path: Path):
    with ScriptedServer([bash("Nothing to do.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]) as server:
        ws, result = run_peer(tmp_path, "peer-mini-swe-agent", server, steps=2)
    assert result.result.steps_completed == 0 and result.result.stop_reason == "agent_failed"
    assert "without calling the evaluator" in result.result.stop_detail


def test_a_peer_that_hangs_is_killed_at_its_time_limit(tmp_path: Path):
    def stall(request: dict) -> str:
        time.sleep(30)
        return bash("Too late.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")

    started = time.monotonic()
    with ScriptedServer([], fallback=stall) as server:
        ws, result = run_peer(tmp_path, "peer-mini-swe-agent", server, steps=2, timeout_s="8")
    assert time.monotonic() - started < 28  # killed at its limit, not left to finish
    assert (
        result.result.stop_reason == "wall_time" and "had not ended at its time limit (8s)" in result.result.stop_detail
    )
