"""`bench peers install|list`, `bench agents` and `bench run --agents peer-...` through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiscientist.records.cell import CellSummary
from bench.peers.specs import CACHE_ENV, PeerEnvError, PeerSpec, install
from tests.bench.agents.test_bench_agents import TASK
from tests.bench.peers.loopback import ScriptedServer
from tests.bench.peers.test_peer_mini_swe_agent import bash, installed

ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiscientist", "bench", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def test_a_peer_that_cannot_be_built_names_the_package_and_pips_error(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    broken = PeerSpec(name="mini-swe-agent", package="mini-swe-agent", version="0.0.0.999", driver="none")
    monkeypatch.setitem(sys.modules["bench.peers.specs"].PEERS.entries, "mini-swe-agent", broken)
    with pytest.raises(PeerEnvError, match=r"pip install mini-swe-agent==0\.0\.0\.999 failed .*for mini-swe-agent"):
        install("mini-swe-agent", progress=lambda line: None)


def test_unknown_peer_and_missing_environment_are_clear_errors(tmp_path: Path):
    done = cli("peers", "install", "gpt-engineer")
    assert done.returncode == 2 and "unknown peer 'gpt-engineer'; choose one of aide, mini-swe-agent" in done.stderr
    listed = cli("peers", "list", env={CACHE_ENV: str(tmp_path)})
    assert listed.returncode == 0 and "peer-aide\taideml==0.2.2\tnot installed" in listed.stdout


def test_bench_agents_lists_peers_next_to_our_reimplementations():
    rows = json.loads(cli("agents", "--json").stdout)
    names = {row["agent"] for row in rows}
    assert {"aide", "openevolve", "peer-aide", "peer-openevolve", "peer-mini-swe-agent"} <= names


@pytest.mark.skipif(not installed("mini-swe-agent"), reason="bench peers install mini-swe-agent")
def test_bench_run_with_a_peer_writes_the_same_cell(tmp_path: Path):
    replies = [
        bash("More epochs.", "sed -i 's/EPOCHS = 40/EPOCHS = 100/' config.py"),
        bash("Measure.", "run_experiment 'epochs 100'"),
    ]
    with ScriptedServer(replies, fallback=bash("Done.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")) as server:
        done = cli(
            "run", "--agents", "peer-mini-swe-agent", "--tasks", str(TASK), "--rounds", "1", "--steps", "2",
            "--model", "openai/scripted", "--judge-model", "offline", "--out", str(tmp_path / "results"),
            "--option", f"peer-mini-swe-agent.api_base={server.api_base}", "--no-progress", "--embedder", "minilm",
            env={"OPENAI_API_KEY": "sk-loopback"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    cell = tmp_path / "results/runs/tiny-quadratic/peer-mini-swe-agent/round_1"
    result = CellSummary.model_validate_json((cell / "result.json").read_text())
    assert result.result.steps_completed == 1 and result.result.test_metric is not None
    assert (cell / "ws/experiments/step_0001/step.json").is_file()
    assert list(cell.glob("**/run.html")) and (tmp_path / "results/report").is_dir()


@pytest.mark.slow
@pytest.mark.skipif(not installed("mini-swe-agent"), reason="bench peers install mini-swe-agent")
def test_the_grid_goes_on_past_a_peer_that_hangs_and_one_that_never_evaluates(tmp_path: Path):
    asked = []

    def reply(request: dict) -> str:
        asked.append(request)
        if len(asked) == 1:  # round 1's first call never comes back in time
            time.sleep(20)  # past the peer's time limit below; the server waits for this answer on exit
        return bash("Nothing to do.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")

    with ScriptedServer([], fallback=reply) as server:
        done = cli(
            "run", "--agents", "peer-mini-swe-agent", "--tasks", str(TASK), "--rounds", "2", "--steps", "2",
            "--model", "openai/scripted", "--judge-model", "offline", "--out", str(tmp_path / "results"),
            "--option", f"peer-mini-swe-agent.api_base={server.api_base}", "--workers", "1",
            "--option", "peer-mini-swe-agent.timeout_s=15", "--no-progress", "--embedder", "minilm",
            env={"OPENAI_API_KEY": "sk-loopback"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    cells = tmp_path / "results/runs/tiny-quadratic/peer-mini-swe-agent"
    results = [CellSummary.model_validate_json((cells / f"round_{k}/result.json").read_text()) for k in (1, 2)]
    assert [r.result.stop_reason for r in results] == ["wall_time", "agent_failed"], results
    assert "peer mini-swe-agent had not ended at its time limit (15s)" in done.stderr
    assert "peer mini-swe-agent ended without calling the evaluator" in done.stderr
    assert (tmp_path / "results/report/index.html").is_file()
