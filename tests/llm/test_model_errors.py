"""Model errors say what they are in their first line, within seconds when the cause is
immediate: a missing key, an unknown model, a refused key, a refused connection, an
unreachable host, a timeout. Real litellm against loopback servers and closed ports."""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import pytest
import yaml

from aiscientist.cli.app import main
from aiscientist.orchestrator.preflight import check_model
from aiscientist.task import TaskError
from tests.fixtures.llm.fake_openai import FakeOpenAI, error, stall

MODEL = "openai/fake-model"
TINY = Path(__file__).parents[1] / "fixtures" / "tiny"
UNREACHABLE = "http://192.0.2.77:8000/v1"  # TEST-NET-1: nothing answers there


def _models(tmp_path: Path, api_base: str) -> Path:
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": {MODEL: {"api_base": api_base}}}))
    return models


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _first_line(model: str, models: Path | None, timeout_s: float = 30) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(TaskError) as caught:
        check_model(model, models, timeout_s)
    return str(caught.value).splitlines()[0], time.monotonic() - started


def test_a_missing_key_is_named_at_once(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    line, took = _first_line("openai/gpt-4o-mini", None)
    assert line.startswith("--model: openai/gpt-4o-mini: missing API key: ") and "OPENAI_API_KEY" in line
    assert "does not answer" not in line and took < 15


def test_a_model_no_provider_knows_is_named():
    line, took = _first_line("no-such-provider-model-xyz", None)
    assert "unknown model 'no-such-provider-model-xyz'" in line and took < 15


@pytest.mark.parametrize(
    ("status", "message", "named"),
    [
        (404, "The model `fake-model` does not exist", "unknown model"),
        (401, "Incorrect API key provided", "API key refused"),
    ],
)
def test_the_servers_refusals_are_named(tmp_path, monkeypatch, status, message, named):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with FakeOpenAI([error(status, message=message)]) as server:
        line, took = _first_line(MODEL, _models(tmp_path, server.api_base))
    assert line.startswith(f"--model: {MODEL}: {named}") and f"HTTP {status}: {message}" in line and took < 15


def test_a_refused_connection_is_named_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    api_base = f"http://127.0.0.1:{_closed_port()}/v1"
    line, took = _first_line(MODEL, _models(tmp_path, api_base))
    assert line.startswith(f"--model: {MODEL}: connection refused ({api_base}): nothing listens there"), line
    assert "slow local model" not in line and took < 15


def test_an_unreachable_host_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    line, took = _first_line(MODEL, _models(tmp_path, UNREACHABLE), timeout_s=2)
    assert line.startswith(f"--model: {MODEL}: host unreachable ({UNREACHABLE})"), line
    assert took < 15


def test_a_server_that_does_not_answer_times_out(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with FakeOpenAI([stall(4)]) as server:
        line, took = _first_line(MODEL, _models(tmp_path, server.api_base), timeout_s=1)
    assert line.startswith(f"--model: {MODEL}: timed out ({server.api_base}): no answer within 1 s"), line
    assert "preflight_model_timeout_s" in line and took < 15


def test_solve_leads_with_the_cause_before_any_sandbox_work(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    shutil.copytree(TINY, tmp_path / "tiny")
    started = time.monotonic()
    code = main(["solve", str(tmp_path / "tiny" / "task.yaml"), "--model", "openai/gpt-4o-mini"])
    first = capsys.readouterr().err.strip().splitlines()[0]
    assert code == 2 and first.startswith("error: --model: openai/gpt-4o-mini: missing API key"), first
    assert time.monotonic() - started < 20
