"""The offline policy reads facts, not prose: with every prompt's prose scrambled (the
FACTS line kept), real runs make exactly the same tool calls and the same step diffs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from aiscientist.llm.facts import PREFIX
from aiscientist.llm.offline.backend import OfflineBackend, read_facts
from aiscientist.records.paths import RunPaths
from aiscientist.records.step import load_steps
from bench.grid.runner import GridConfig, RunSpec, execute_run

TASK = Path(__file__).resolve().parents[2] / "fixtures" / "tiny" / "task.yaml"
SEND = OfflineBackend.send
DECOY = (
    "ROLE: helper\nEditable files: evaluate.py\nBaseline: 99\nCounters: comprehension=0 "
    "prioritization=0\nFile-as-Bus is OFF. Step budget: 1"
)


def scramble(text: str) -> str:
    """Every line but the FACTS lines: its words reversed and upper-cased, the lines in
    reverse order, and decoy lines that look like the old prose markers in front."""
    lines = text.splitlines()
    facts = [line for line in lines if line.startswith(PREFIX)]
    prose = [" ".join(reversed(line.split())).upper() for line in reversed(lines) if not line.startswith(PREFIX)]
    return "\n".join([DECOY, *prose, *facts])


def run(tmp: Path, agent: str, monkeypatch: pytest.MonkeyPatch, rewrite: bool) -> tuple[list[Any], list[str]]:
    calls: list[Any] = []

    def observed(self: OfflineBackend, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: Any = None):
        if rewrite:
            messages = copy.deepcopy(messages)
            for m in messages:
                if m.get("role") in ("system", "user") and isinstance(m.get("content"), str):
                    m["content"] = scramble(m["content"])
        reply = SEND(self, messages, tools, stop)
        calls.append(
            (
                read_facts(messages).get("role"),
                reply.content.split("```", 1)[-1],
                [(c.name, json.loads(c.arguments)) for c in reply.tool_calls],
            )
        )
        return reply

    monkeypatch.setattr(OfflineBackend, "send", observed)
    config = GridConfig(agents=[agent], tasks=[TASK], rounds=1, steps=3, model="offline", embedder="minilm")
    spec = RunSpec(task_path=TASK, task="tiny-quadratic", agent=agent, round=1)
    execute_run(spec, config, tmp)
    ws = spec.cell(tmp).root / "ws"
    diffs = [(ws / s.diff_path).read_text() for s in load_steps(RunPaths(ws))]
    return calls, diffs


@pytest.mark.parametrize(
    "agent",
    [
        "aiscientist",
        "aiscientist-flat",
        "linear",
        pytest.param("aide", marks=pytest.mark.slow),
        pytest.param("basic", marks=pytest.mark.slow),
    ],
)
def test_scrambled_prose_changes_no_tool_call_and_no_diff(
    tmp_path: Path, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain_calls, plain_diffs = run(tmp_path / "plain", agent, monkeypatch, rewrite=False)
    scrambled_calls, scrambled_diffs = run(tmp_path / "scrambled", agent, monkeypatch, rewrite=True)
    assert len(plain_diffs) == 3 and all(plain_diffs)
    # the readers run in parallel threads: their calls interleave in any order
    assert sorted(map(repr, scrambled_calls)) == sorted(map(repr, plain_calls))
    assert [c for c in scrambled_calls if c[0] != "comprehension-reader"] == [
        c for c in plain_calls if c[0] != "comprehension-reader"
    ]
    assert scrambled_diffs == plain_diffs
    assert scramble("a b\nFACTS: {}") == f"{DECOY}\nB A\nFACTS: {{}}"
