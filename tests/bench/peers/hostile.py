"""A test peer whose process is hostile (`hostile_driver.py`, under mini-swe-agent's interpreter),
and a one-cell grid on the tiny task with a chosen sandbox backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiscientist.records.cell import CellSummary
from aiscientist.records.paths import RunPaths
from bench.grid.runner import execute_run
from bench.grid.spec import GridConfig, RunSpec
from bench.peers.adapter import PeerAgent
from tests.bench.agents.test_bench_agents import TASK

NAME = "peer-hostile"


class HostilePeer(PeerAgent):
    name = NAME
    peer = "mini-swe-agent"

    def driver(self) -> Path:
        return Path(__file__).resolve().parent / "hostile_driver.py"


def run_cell(
    out: Path, agent: str, api_base: str, sandbox: str = "auto", steps: int = 2, **options: Any
) -> tuple[Path, dict]:
    """One cell through the grid's own `execute_run`; `attack` (a dict) becomes the hostile peer's option."""
    if "attack" in options:
        options["attack"] = json.dumps(options["attack"])
    config = GridConfig(
        agents=[agent],
        tasks=[TASK],
        rounds=1,
        steps=steps,
        model="openai/scripted",
        judge_model="offline",
        sandbox=sandbox,
        options={agent: {"api_base": api_base, "api_key": "sk-host-only", "timeout_s": "300", **options}},
        embedder="minilm",
    )
    spec = RunSpec(task_path=TASK, task="tiny-quadratic", agent=agent, round=1)
    execute_run(spec, config, out)
    folder = spec.cell(out).root
    return folder / "ws", CellSummary.model_validate_json((folder / "result.json").read_text())


def seen(ws: Path) -> dict[str, Any]:
    """What the hostile peer reported from inside its sandbox."""
    output = RunPaths(ws).peer_output.read_text()  # the host's file: what the sandbox's pipes carried
    for line in output.splitlines():
        if line.startswith("SEEN "):
            return json.loads(line.removeprefix("SEEN "))
    raise AssertionError("the hostile peer reported nothing: " + output[-2000:])
