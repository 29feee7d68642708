"""The peer process itself runs in our sandbox (bwrap, docker): a hostile peer process tries the
attack corpus's host reads, network, environment secrets and writes outside its areas; it
reaches only its own folder, its interpreter and the model endpoint, and its cell still ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiscientist.sandbox.docker import docker_problem
from bench.agents import AGENTS, AgentEntry, load_all
from bench.peers.adapter import DRIVERS
from bench.peers.specs import cache_dir
from tests.bench.agents.test_bench_agents import TASK
from tests.bench.peers.hostile import NAME, HostilePeer, run_cell, seen
from tests.bench.peers.loopback import ScriptedServer
from tests.bench.peers.test_peer_mini_swe_agent import installed

pytestmark = pytest.mark.skipif(not installed("mini-swe-agent"), reason="bench peers install mini-swe-agent")
SECRET = "TOP-SECRET-peer-process-91c4"
DOCKER = pytest.param("docker", marks=pytest.mark.skipif(bool(docker_problem()), reason="no Docker engine"))
BACKENDS = ["bwrap", DOCKER]


@pytest.fixture(autouse=True)
def hostile_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    load_all()
    monkeypatch.setitem(AGENTS.entries, NAME, AgentEntry(NAME, HostilePeer, {"peer": ("bash", "run_experiment")}))


def port_of(server: ScriptedServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_peer_process_reaches_only_its_folder_interpreter_and_model(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    host = tmp_path / "host"
    host.mkdir()
    (host / "id_rsa").write_text(SECRET)
    out = tmp_path / "out"
    other = out / "runs/tiny-quadratic/aide/round_1/ws/submission"
    other.mkdir(parents=True)
    (other / "config.py").write_text(SECRET)
    own = out / f"runs/tiny-quadratic/{NAME}/round_1/ws"
    with ScriptedServer([], fallback="hello from the model") as server:
        attack = {
            "reads": [
                *(str(p) for p in (host / "id_rsa", host, other / "config.py", own / "submission/config.py")),
                *(str(p) for p in (own / "experiments", TASK.parent / "repo/heldout/seed.json")),
                *(str(Path.home() / p) for p in (".bashrc", ".ssh", ".cache/pip", ".pyenv/version")),
                *("/etc/shadow", "/work/scratch", "/var/run/docker.sock", "/run/docker.sock"),
            ],
            "connects": [["127.0.0.1", port_of(server)], ["10.0.0.1", 80], ["1.1.1.1", 53]],
            "writes": [
                *(str(p) for p in (host / "pwned", other / "pwned.py", own / "submission/evaluate.py")),
                *(str(p) for p in (DRIVERS / "pwned.py", cache_dir() / "mini-swe-agent/pwned", "/usr/pwned")),
                str(own / "state/peer_brief.json"),  # its output file the host writes after it, from the pipes
            ],
        }
        ws, result = run_cell(out, NAME, server.api_base, backend, attack=attack)
        keys = list(server.keys)
    got = seen(ws)
    assert all(v.startswith("no ") for v in got["reads"].values()), {
        k: v for k, v in got["reads"].items() if v[:3] != "no "
    }
    assert all(v.startswith("no ") for v in got["connects"].values()), {
        k: v for k, v in got["connects"].items() if v[:3] != "no "
    }
    assert all(v.startswith("no ") for v in got["writes"].values()), {
        k: v for k, v in got["writes"].items() if v[:3] != "no "
    }
    assert not (host / "pwned").exists() and not (DRIVERS / "pwned.py").exists()
    # the host's own files about the peer sit outside its folder: its brief is read-only, its output the pipe's
    assert "peer was here" not in (ws / "state/peer_brief.json").read_text()
    assert "peer was here" not in (ws / "state/peer_output.txt").read_text()
    assert not (ws / "state/agent/brief.json").exists() and not (ws / "state/agent/output.txt").exists()
    assert (ws / "submission/evaluate.py").read_text() == (TASK.parent / "repo/evaluate.py").read_text()
    assert SECRET not in json.dumps(got["env"]) and not [k for k in got["env"] if "KEY" in k or "SECRET" in k]
    assert got["env"]["HOME"] != str(Path.home())
    # the endpoint works, through the host's relay, which adds the run's key (never the peer's)
    assert got["model"] == "hello from the model" and keys == ["Bearer sk-host-only"]
    assert result.result.steps_completed == 1 and result.result.stop_reason == "finished", result
    # it changed no code: its one step repeats the baseline (#42), so no step is a best and no hidden test runs
    step = json.loads((ws / "experiments/step_0001/step.json").read_text())
    assert step["success"] and step["repeat_of"] == 0 and result.result.test_metric is None


@pytest.mark.parametrize(
    ("attack", "cause"),
    [
        ({"crash": True}, "RuntimeError: the hostile peer crashed on purpose"),
        ({"writes": ["/etc/peer_was_here"], "evaluate": False, "exit": 3}, "exited 3"),
    ],
    ids=["crash", "write-outside"],
)
def test_a_peer_that_crashes_or_writes_outside_ends_its_cell_with_the_cause(
    tmp_path: Path, attack: dict, cause: str, capsys: pytest.CaptureFixture[str]
):
    with ScriptedServer([], fallback="hi") as server:
        ws, result = run_cell(tmp_path, NAME, server.api_base, attack=attack)
    assert result.result.stop_reason == "agent_failed" and cause in result.result.stop_detail, result
    assert cause in capsys.readouterr().err  # the cause on the console
    assert not Path("/etc/peer_was_here").exists()


def test_on_the_local_backend_the_console_says_the_peer_runs_on_the_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    with ScriptedServer([], fallback="hi") as server:
        ws, result = run_cell(tmp_path, NAME, server.api_base, "local", attack={})
    assert "the local sandbox is no boundary: the peer process runs on the host" in capsys.readouterr().err
    assert result.result.steps_completed == 1 and seen(ws)["model"] == "hi"  # it still works, through the same sockets
