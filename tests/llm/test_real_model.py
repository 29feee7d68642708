"""`solve --model local/qwen2.5-coder-0.5b`: a real local model drives the flat agent.

The run starts llama.cpp's server itself (nothing answers at the models-file port), the
model writes its tool calls as text (`tool_calls: prompt`: no `tools` parameter, the
schemas in the system prompt), the client parses them, and the model's own
`run_experiment` call runs one counted step that is recorded and passes `verify`. The
assertions are about the machinery, not the model's cleverness: the task copy asks for
that first call in so many words, which the 0.5B model follows. One call takes 10-60 s
on two cores. Needs `scripts/setup.sh --local-model`; with AISCIENTIST_REQUIRE_LOCAL_MODEL
set (CI) a missing server or model fails instead of skipping.
Run it alone with:  python -m pytest -n 0 -s tests/llm/test_real_model.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
from pathlib import Path

import pytest
import yaml

from aiscientist.llm.local.gguf import cache_dir
from aiscientist.llm.local.server import answers
from tests.fixtures.llm.runs import TINY, assert_verified, calls, result, solve

pytestmark = pytest.mark.slow
MODEL, GGUF = "local/qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b"
FIRST_CALL = {"name": "run_experiment", "arguments": {"hypothesis": "baseline"}}


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not importable"
    if not (cache_dir() / f"{GGUF}.gguf.verified").is_file():
        return f"the {GGUF} GGUF is not assembled in {cache_dir()}"
    return None


if (why := _missing()) is not None:
    message = f"{why}: run scripts/setup.sh --local-model"
    if os.environ.get("AISCIENTIST_REQUIRE_LOCAL_MODEL"):
        pytest.fail(f"AISCIENTIST_REQUIRE_LOCAL_MODEL is set but {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def steered_task(folder: Path) -> Path:
    """The tiny task, its description ending with the one call to make first."""
    shutil.copytree(TINY.parent / "repo", folder / "repo")
    task = yaml.safe_load(TINY.read_text())
    task["description"] += (
        "\nStart by measuring the unchanged code: your first reply must be exactly this one line:\n"
        f"{json.dumps(FIRST_CALL)}\n"
    )
    path = folder / "task.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def test_a_real_local_model_runs_an_experiment_through_its_own_text_tool_calls(tmp_path: Path) -> None:
    api_base = f"http://127.0.0.1:{_free_port()}/v1"
    entry = {
        "gguf": GGUF, "api_base": api_base, "context_window": 8192, "tool_calls": "prompt", "max_parallel": 1,
        "max_tokens": 128, "timeout_s": 600, "patience_s": 900,
    }  # fmt: skip
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": {MODEL: entry}}))
    assert not answers(api_base)
    run, recorded = tmp_path / "run", tmp_path / "requests"
    bounds = ("--set", "hierarchy=false", "--set", "wall_time_s=900")
    done = solve(
        run, models, *bounds, steps=1, model=MODEL, task=steered_task(tmp_path), before=("--record", str(recorded)),
        timeout=1500,
    )  # fmt: skip
    print(done.stdout[-3000:])
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert not answers(api_base)  # the server the run started is stopped with it

    outcome = result(run)
    assert outcome["stop_reason"] not in (None, "model_error", "model_unavailable")
    assert outcome["steps_completed"] == 1 and (run / "experiments" / "step_0001" / "step.json").is_file()
    records = calls(run)
    assert records and all(r["outcome"] == "ok" and r["model"] == MODEL for r in records)
    assert all(r["tool_call_mode"] == "prompt" and r["tools_offered"] for r in records)
    assert records[0]["tool_calls"] == ["run_experiment"] and records[0]["invalid_tool_calls"] == 0
    assert not any(r["tokens_estimated"] for r in records)  # the server reported usage
    assert outcome["tokens"] == sum(r["prompt_tokens"] + r["completion_tokens"] for r in records)

    first = json.loads(next(recorded.glob(f"{records[0]['request_hash']}.json")).read_text())
    assert first["request"]["tools"] == [] and '"name":"run_experiment"' in first["request"]["messages"][0]["content"]
    assert_verified(run)
