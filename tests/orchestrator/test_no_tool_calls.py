"""A model that never calls a tool ends the run with a stop reason that says so, after
`orchestrator.no_tool_call_limit` decisions, instead of looping until the budget runs out."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aiscientist.agent.outcome import StopReason
from aiscientist.config import RunConfig
from aiscientist.orchestrator import solve
from aiscientist.task import load_task
from aiscientist.workspace import verify_run

TINY = Path(__file__).parents[1] / "fixtures" / "tiny" / "task.yaml"


@pytest.mark.parametrize("hierarchy", [True, False])
def test_text_only_replies_end_the_run_as_agent_failed(tmp_path: Path, hierarchy: bool) -> None:
    script = tmp_path / "script.yaml"
    prose = ["I would start by reading train.py.", "Then I would lower the learning rate.", "That is my plan.", "More"]
    script.write_text(yaml.safe_dump(prose))
    config = RunConfig(sandbox="local", hierarchy=hierarchy)
    result = solve(load_task(TINY), tmp_path / "run", config, model=f"scripted:{script}", steps=2)
    assert result.stop_reason is StopReason.AGENT_FAILED
    assert result.stop_detail.startswith("the model answered 3 times in a row without calling a tool")
    assert result.steps_completed == 0
    assert verify_run(tmp_path / "run").clean
