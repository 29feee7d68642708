"""One registration per agent (aiscientist/agent/registry.py): `bench agents --json` is the
registry as registered, each role's offline policy is the one the offline model answers with,
AiScientist's specialists own theirs, and the task kinds an agent takes decide the grid."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aiscientist.agent import toolsets
from aiscientist.agent.context import RunContext
from aiscientist.agent.registry import AGENTS, register_agent, role_sampling
from aiscientist.config import RunConfig
from aiscientist.llm.offline.backend import POLICIES
from aiscientist.orchestrator.arms import PLAN_TOKENS
from aiscientist.specialists import comprehension, experimentation, helper, implementation, prioritization
from aiscientist.task import load_task
from aiscientist.workspace import Workspace
from bench.agents import agent_entry, agent_names

ROOT = Path(__file__).resolve().parents[3]


def test_bench_agents_json_is_the_one_registry() -> None:
    names = agent_names()
    done = subprocess.run(
        [sys.executable, "-m", "aiscientist", "bench", "agents", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert listed == json.loads(json.dumps(toolsets.rows()))  # the same rows as registered here
    assert list(dict.fromkeys(r["agent"] for r in listed)) == names
    for row in listed:
        entry = agent_entry(row["agent"])
        assert row["kinds"] == list(entry.kinds) and tuple(row["tools"]) == entry.tools.get(row["role"], ())
    rows = {(r["agent"], r["role"]): r for r in listed}
    assert rows[("hpsearch", None)]["tools"] == []  # it calls no model
    assert rows[("aide", "aide")]["sampling"] == {"temperature": 0.5} and rows[("aide", "aide")]["offline_policy"]
    assert rows[("openevolve", "openevolve")]["sampling"] == {"temperature": 0.7}
    paper = {r["agent"] for r in listed if "reproduce" in r["kinds"]}
    assert paper == {"basic", "iterative", "aiscientist", "aiscientist-nobus", "aiscientist-flat"}


def test_each_roles_offline_policy_is_its_registered_one_and_specialists_own_theirs() -> None:
    for name in agent_names():
        for role, handler in agent_entry(name).policies.items():
            assert POLICIES.get(role) is handler, (name, role)
    own = {
        "comprehension": comprehension.offline_policy,
        "comprehension-reader": comprehension.reader_policy,
        "prioritization": prioritization.offline_policy,
        "implementation": implementation.offline_policy,
        "experimentation": experimentation.offline_policy,
        "helper": helper.offline_policy,
    }
    assert {role: POLICIES.get(role) for role in own} == own
    assert all(handler.__module__.startswith("aiscientist.specialists.") for handler in own.values())
    assert POLICIES.get("orchestrator").__module__ == "aiscientist.orchestrator.offline"
    assert role_sampling("aide") == {"temperature": 0.5} and role_sampling("implementation") == {}


def test_a_second_registration_under_a_taken_name_or_an_unknown_kind_is_refused() -> None:
    agent_names()
    aide = agent_entry("aide")
    register_agent("aide", aide.cls, aide.tools, aide.policies, aide.sampling)  # the same again: no-op
    with pytest.raises(ValueError, match="another agent is already registered as 'aide'"):
        register_agent("aide", aide.cls, {"aide": ("bash",)})
    with pytest.raises(ValueError, match="unknown task kinds \\['review'\\]"):
        register_agent("reviewer", aide.cls, {}, kinds=("review",))  # type: ignore[arg-type]
    assert "reviewer" not in AGENTS


def test_a_roles_answer_length_is_a_cap_over_the_models_file(tmp_path: Path) -> None:
    """Prioritization answers within PLAN_TOKENS (the 1.5B model repeated one line to its 1,024-token limit);
    a models file's lower limit stays."""
    agent_names()
    ws = Workspace.create(load_task(ROOT / "tests" / "fixtures" / "tiny" / "task.yaml"), tmp_path / "run")
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  offline: {max_tokens: 300}\n  other: {max_tokens: 4000}\n")
    for model, expected in (("offline", 300), ("other", PLAN_TOKENS)):
        ctx = RunContext(agent="aiscientist", ws=ws, model=model, steps=1, config=RunConfig(models_file=models))
        assert ctx.llm_config("prioritization").max_tokens == expected
        assert ctx.llm_config("implementation").max_tokens == {"offline": 300, "other": 4000}[model]
