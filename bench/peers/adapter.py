"""The adapter contract: what a peer is told, in its own terms, and how its process is run.

A peer gets a `PeerBrief` (JSON in `state/peer/brief.json`): the task (goal, metric and
direction, editable files, the evaluation command — our `run_experiment`), the budget (one
counted experiment is one of our steps; the driver maps it to the peer's own iterations)
and the model (a litellm name and, for OpenAI-compatible servers, `api_base`). The peer's
driver script runs under the peer's own interpreter (`bench/peers/specs.py`) and reaches
the run only through the bridge (`bench/peers/bridge.py`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path

from pydantic import BaseModel

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.llm import load_llm_config
from aiscientist.util.console import make_console
from bench.peers.bridge import Bridge
from bench.peers.meter import Meter
from bench.peers.specs import PeerEnvError, ensure, spec

DRIVERS = Path(__file__).resolve().parent / "drivers"
# host variables a peer's own model client may need (the endpoint's key); nothing else of the host
_MODEL_ENV = re.compile(r"[A-Z0-9_]*_(API_KEY|API_BASE|BASE_URL)|LITELLM_[A-Z_]+")
console = make_console(stderr=True, soft_wrap=True)


class PeerModel(BaseModel):
    name: str  # a litellm name (`openai/<alias>` for an OpenAI-compatible server)
    api_base: str | None = None
    api_key: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = None  # the models file's cap on one answer


class PeerBrief(BaseModel):
    goal: str  # the task's one-screen summary
    metric: str  # its label, e.g. quadratic/mse
    direction: str  # "min" or "max"
    baseline: float | None
    editable: list[str]  # relative to the working folder
    eval_command: str  # what the peer runs to evaluate (routed to our engine)
    steps: int  # counted experiments the peer may run
    model: PeerModel
    options: dict[str, str] = {}


def peer_model(ctx: RunContext) -> PeerModel:
    """The run's model as the peer's own client reaches it."""
    model = ctx.model or ""
    if not model or model == "offline" or model.startswith("scripted:"):
        raise ValueError(
            f"agent {ctx.agent} runs a peer's own model client: give --model a litellm name, "
            f"a local/... model or an OpenAI-compatible endpoint (option api_base), not {model!r}"
        )
    config = load_llm_config(model, ctx.config.models_file)
    api_base = ctx.options.get("api_base") or config.api_base
    if model.startswith("local/"):
        ctx.client("peer")  # starts the llama.cpp server if nothing answers at the entry's api_base
        alias = model.removeprefix("local/")
        return PeerModel(name=f"openai/{alias}", api_base=api_base, api_key="local", max_tokens=config.max_tokens)
    key = ctx.options.get("api_key")
    return PeerModel(
        name=model, api_base=api_base, api_key=key, temperature=config.temperature, max_tokens=config.max_tokens
    )


def brief(ctx: RunContext) -> PeerBrief:
    task = ctx.task
    metric = task.metric
    return PeerBrief(
        goal=task.summary(),
        metric=metric.label if metric else "metric",
        direction=metric.direction if metric else "max",
        baseline=task.baseline,
        editable=ctx.editable_files(),
        eval_command="run_experiment",
        steps=ctx.steps_left(),
        model=peer_model(ctx),
        options={k: str(v) for k, v in ctx.options.items() if k not in ("api_key",)},
    )


class PeerAgent:
    """A peer's released code as a bench agent; subclasses name the peer."""

    name = "peer"
    peer = ""
    needs_model = True

    def solve(self, ctx: RunContext) -> Outcome:
        python = ensure(self.peer)
        folder = ctx.ws.paths.state / "peer"
        (folder / "home").mkdir(parents=True, exist_ok=True)
        told = brief(ctx)
        timeout = float(ctx.options.get("timeout_s", ctx.wall_time_s or 3600))
        with contextlib.ExitStack() as stack:
            if told.model.api_base:  # the peer's tokens are counted on their way back
                meter = stack.enter_context(Meter(told.model.api_base, ctx.ws.paths.root, self.name))
                told.model.api_base = meter.url
            (folder / "brief.json").write_text(told.model_dump_json(indent=1))
            bridge = stack.enter_context(Bridge(ctx))
            env = self.environment(folder, bridge)
            driver = DRIVERS / f"{spec(self.peer).driver}.py"
            code = _run([str(python), str(driver), str(folder / "brief.json")], folder, env, timeout)
            calls = dict(bridge.calls)
        return self.outcome(ctx, code, calls, folder / "output.txt", timeout)

    def environment(self, folder: Path, bridge: Bridge) -> dict[str, str]:
        """The peer process's whole environment: its venv, a home of its own, the bridge and the model's key."""
        python_bin = str(ensure(self.peer).parent)
        env = {k: v for k, v in os.environ.items() if _MODEL_ENV.fullmatch(k)}
        env.update(
            PATH=f"{python_bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
            HOME=str(folder / "home"),
            TMPDIR=str(folder / "home"),
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            HF_HUB_OFFLINE="1",
            PYTHONUNBUFFERED="1",
            AISCI_BRIDGE=bridge.url,
            AISCI_BRIDGE_TOKEN=bridge.token,
            AISCI_PEER_DIR=str(folder),
        )
        return env

    def outcome(
        self, ctx: RunContext, code: int | None, calls: dict[str, int], output: Path, timeout: float
    ) -> Outcome:
        tail = output.read_text(errors="replace")[-1500:] if output.is_file() else ""
        if code is None:
            detail = f"peer {self.peer} hung past its time limit ({timeout:g}s) and was killed"
            stop = StopReason.WALL_TIME
        elif ctx.steps_left() == 0:
            return Outcome(stop=StopReason.STEP_BUDGET, detail=f"peer {self.peer} used its {ctx.steps} steps")
        elif code != 0:
            detail, stop = f"peer {self.peer} exited {code}: {tail[-600:].strip()}", StopReason.AGENT_FAILED
        elif calls["experiment"] == 0:
            detail, stop = f"peer {self.peer} ended without calling the evaluator", StopReason.AGENT_FAILED
        else:
            return Outcome(stop=StopReason.FINISHED, detail=f"peer {self.peer} ended its own run")
        console.print(f"[yellow]{ctx.agent}[/yellow] on {ctx.task.name}: {detail} (see ws/state/peer/output.txt)")
        return Outcome(stop=stop, detail=detail)


def _run(argv: list[str], folder: Path, env: dict[str, str], timeout: float) -> int | None:
    """The driver's exit code; None when it was killed at `timeout`."""
    with open(folder / "output.txt", "ab") as output:
        proc = subprocess.Popen(
            argv, cwd=folder, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)  # no child of the peer outlives it
        proc.wait()


__all__ = ["PeerAgent", "PeerBrief", "PeerEnvError", "PeerModel", "brief", "peer_model"]
