"""peer-openevolve end to end on the tiny task: OpenEvolve's released `run_evolution`, a
scripted OpenAI-compatible server replying in its SEARCH/REPLACE diff format, and our
engine as its evaluator (every program it evaluates is one of our steps)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from tests.bench.peers.loopback import ScriptedServer
from tests.bench.peers.test_peer_mini_swe_agent import installed, run_peer

pytestmark = pytest.mark.skipif(not installed("openevolve"), reason="bench peers install openevolve")


def diff(request: dict[str, Any]) -> str:
    """More epochs than the program shown has, as OpenEvolve's prompt asks: a SEARCH/REPLACE block."""
    prompt = request["messages"][-1]["content"]
    old, new = ("EPOCHS = 120", "EPOCHS = 200") if "EPOCHS = 120" in prompt else ("EPOCHS = 40", "EPOCHS = 120")
    return f"More epochs fit the quadratic better.\n\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def test_openevolve_programs_are_measured_by_our_engine(tmp_path: Path):
    with ScriptedServer([], fallback=diff) as server:
        ws, result = run_peer(tmp_path, "peer-openevolve", server, steps=3, file="config.py")
    steps = load_steps(RunPaths(ws))
    assert len(steps) == 3 and all(s.agent == "peer-openevolve" and s.success for s in steps)
    epochs = [(ws / s.code_path / "config.py").read_text().split("EPOCHS = ")[1].split()[0] for s in steps]
    assert epochs[0] == "40" and "120" in epochs[1:]  # the initial program, then its evolved children
    assert "quadratic" in server.requests[0]["messages"][0]["content"]  # the task reached OpenEvolve's prompt
    assert min(s.metric for s in steps) < 0.6072 == pytest.approx(steps[0].metric, abs=1e-3)
    assert result.has_test and result.result.test_metric is not None  # the hidden test ran on our best step
    assert result.result.stop_reason == "step_budget", result
