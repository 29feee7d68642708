"""The adapter: the run's model as a peer's own client reaches it (`peer_model`: the models
file's address, answer limits, no sampling of ours) and why a peer's process ended (`cause_of`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aiscientist.agent.context import RunContext
from aiscientist.config import RunConfig
from aiscientist.llm.local import server
from aiscientist.task import load_task
from aiscientist.workspace import Workspace
from bench.peers.adapter import PeerModel, cause_of, peer_model
from tests.fixtures.llm.fake_openai import FakeOpenAI

TINY = Path(__file__).resolve().parents[2] / "fixtures/tiny/task.yaml"


def context(tmp_path: Path, model: str, entry: dict[str, object] | None = None, **options: str) -> RunContext:
    folder = tmp_path / model.replace("/", "_")
    folder.mkdir()
    models = folder / "models.yaml"
    models.write_text(yaml.safe_dump({"models": {model: entry or {}}}))
    ws = Workspace.create(load_task(TINY), folder / "run", sandbox="local")
    config = RunConfig(model=model, models_file=models)
    return RunContext(ws=ws, agent="peer-aide", model=model, steps=1, config=config, options=options)


def test_a_local_model_is_reached_at_its_entrys_server_with_its_limits(tmp_path: Path):
    """The local/ branch: the server already answering is used (none started), the peer gets the
    entry's timeout and answer cap, and samples as its users run it (no temperature of ours)."""
    with FakeOpenAI() as fake:
        entry = {"gguf": "qwen2.5-coder-0.5b", "api_base": fake.api_base, "timeout_s": 900, "max_tokens": 1024}
        got = peer_model(context(tmp_path, "local/mine", entry))
    assert got == PeerModel(name="openai/mine", api_base=fake.api_base, api_key="local", max_tokens=1024, timeout_s=900)
    assert got.temperature is None
    assert fake.api_base not in server._started and fake.api_base in server._answered


def test_a_hosted_model_keeps_its_name_and_takes_the_key_from_options_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    got = peer_model(context(tmp_path, "gpt-4o-mini", {"timeout_s": 120}))
    assert (got.name, got.api_base, got.api_key, got.timeout_s) == (
        "gpt-4o-mini",
        "https://api.openai.com/v1",
        "sk-env",
        120,
    )
    given = peer_model(context(tmp_path, "openai/gpt-4o-mini", api_key="sk-option"))
    assert given.api_key == "sk-option"


def test_models_a_peer_cannot_reach_are_refused_with_the_fix(tmp_path: Path):
    with pytest.raises(ValueError, match="runs a peer's own model client: give --model"):
        peer_model(context(tmp_path, "offline"))
    with pytest.raises(ValueError, match=r"only at an OpenAI-compatible endpoint.*--option peer-aide\.api_base=URL"):
        peer_model(context(tmp_path, "anthropic/claude-3-5-haiku"))


def test_a_peer_that_exits_is_described_by_its_last_exception():
    """mini-swe-agent's context outgrew the local model's 8,192 tokens: the cell's stop detail
    showed the first lines of a 600-character traceback tail, not the error."""
    output = (
        'THOUGHT: run it\nTraceback (most recent call last):\n  File "agent.py", line 3, in step\n'
        "    raise ContextWindowExceededError(\n"
        "litellm.exceptions.ContextWindowExceededError: This model's maximum context length is 8192 tokens\n"
        "During handling of the above exception, another message was logged\n"
    )
    assert cause_of(output).startswith("litellm.exceptions.ContextWindowExceededError: This model's maximum")
    assert cause_of("step 1\nstep 2: giving up\n") == "step 2: giving up"
    assert cause_of("") == "(no output)"
