"""peer-aide end to end on the tiny task: aideml's released `Experiment`, a scripted
OpenAI-compatible server replying as AIDE expects (a plan plus one fenced script; a
`submit_review` tool call for its review), and our engine running every script."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from tests.bench.agents.test_bench_agents import TASK
from tests.bench.peers.loopback import ScriptedServer, ToolCall
from tests.bench.peers.test_peer_mini_swe_agent import installed, run_peer

pytestmark = pytest.mark.skipif(not installed("aide"), reason="bench peers install aide")
ORIGINAL = (TASK.parent / "repo/train.py").read_text()
IMPORT = "from config import DEGREE, EPOCHS, LEARNING_RATE"


def reply(request: dict[str, Any]) -> str | ToolCall:
    prompt = "\n".join(str(m.get("content") or "") for m in request["messages"])
    if request.get("tools"):  # AIDE's review of an execution: read the metric our engine reported
        found = re.search(r"metric: ([0-9.eE+-]+) \(", prompt)
        metric = float(found.group(1)) if found else None
        review = {"is_bug": metric is None, "summary": "ran", "metric": metric, "lower_is_better": True}
        return {"name": "submit_review", "arguments": review}
    assert IMPORT in prompt  # the draft prompt carries the file AIDE's script replaces
    script = ORIGINAL.replace(IMPORT, "from config import DEGREE, LEARNING_RATE\n\nEPOCHS = 150")
    return f"Train three times longer: more epochs fit the quadratic better.\n\n```python\n{script}\n```\n"


def test_aide_scripts_are_run_and_measured_by_our_engine(tmp_path: Path):
    with ScriptedServer([], fallback=reply) as server:
        ws, result = run_peer(tmp_path, "peer-aide", server, steps=2, file="train.py")
    steps = load_steps(RunPaths(ws))
    assert not server.errors
    assert len(steps) == 2 and all(s.agent == "peer-aide" and s.success for s in steps)
    assert "EPOCHS = 150" in (ws / steps[0].code_path / "train.py").read_text()
    assert steps[0].metric < 0.6072 and result.result.best_metric == min(s.metric for s in steps)
    assert any(r.get("tools") for r in server.requests)  # AIDE reviewed our engine's output
    assert result.has_test and result.result.test_metric is not None
    assert result.result.stop_reason == "step_budget", result
