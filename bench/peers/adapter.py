"""The adapter contract: what a peer is told, in its own terms, and how its process is run.

A peer gets a `PeerBrief` (JSON in `state/peer_brief.json`, mounted read-only): the task (goal, metric and
direction, editable files, the evaluation command — our `run_experiment`), the budget (one
counted experiment is one of our steps; the driver maps it to the peer's own iterations)
and the model (a litellm name and, for OpenAI-compatible servers, `api_base`). The peer's
driver script runs under the peer's own interpreter (`bench/peers/specs.py`) inside the run's
sandbox backend, with no network: it reaches the run only through the bridge
(`bench/peers/bridge.py`) and the model only through the gateway (`bench/peers/gateway.py`),
both Unix sockets in a folder mounted into the sandbox, which `drivers/launch.py` relays
from loopback ports inside it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import tempfile
from pathlib import Path

from pydantic import BaseModel

from aiscientist.agent.context import RunContext
from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.experiment import quota
from aiscientist.llm import LLMClient, load_llm_config
from aiscientist.llm.budget import tracker_for_run
from aiscientist.llm.provider.backends import backend_kind
from aiscientist.records.causes import FailureCause
from aiscientist.records.cell import CELL_WS
from aiscientist.records.paths import AGENT_DIR, PEER_OUTPUT, write_atomic
from aiscientist.sandbox import get_sandbox
from aiscientist.util.console import make_console
from bench.peers.bridge import Bridge
from bench.peers.gateway import Gateway
from bench.peers.specs import PeerEnvError, ensure, spec

DRIVERS = Path(__file__).resolve().parent / "drivers"
OPENAI_BASE = "https://api.openai.com/v1"
console = make_console(stderr=True, soft_wrap=True)


class PeerModel(BaseModel):
    name: str  # a litellm name (`openai/<alias>` for an OpenAI-compatible server)
    api_base: str | None = None
    api_key: str | None = None
    temperature: float | None = None  # None: the peer samples as its users run it
    max_tokens: int | None = None  # the models file's cap on one answer
    timeout_s: float | None = None  # the models file's limit on one answer (a local model needs minutes)


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
        return PeerModel(
            name=f"openai/{alias}",
            api_base=api_base,
            api_key="local",
            max_tokens=config.max_tokens,
            timeout_s=config.timeout_s,
        )
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    if api_base is None and provider != "openai":
        raise ValueError(
            f"agent {ctx.agent}: a peer's sandbox reaches its model only at an OpenAI-compatible endpoint, and "
            f"{model!r} has none; give one with --option {ctx.agent}.api_base=URL or in the models file"
        )
    key = ctx.options.get("api_key") or os.environ.get(f"{provider.upper()}_API_KEY")
    return PeerModel(
        name=model,
        api_base=api_base or OPENAI_BASE,
        api_key=key,
        max_tokens=config.max_tokens,
        timeout_s=config.timeout_s,
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

    def driver(self) -> Path:
        return DRIVERS / f"{spec(self.peer).driver}.py"

    def solve(self, ctx: RunContext) -> Outcome:
        python = ensure(self.peer)
        paths = ctx.ws.paths
        paths.agent_dir.mkdir(parents=True, exist_ok=True)
        told = brief(ctx)
        upstream, key = told.model.api_base, told.model.api_key
        told.model.api_base = told.model.api_key = None  # the peer reaches the model through the relay only
        left = ctx.time_left_s()  # the run's wall-time budget bounds the peer's own limit
        timeout = float(ctx.options.get("timeout_s", 3600 if left is None else left))
        timeout = timeout if left is None else min(timeout, left)
        # a short folder: a Unix socket's path has at most 107 bytes
        with tempfile.TemporaryDirectory(prefix="aisci-peer-") as tmp, contextlib.ExitStack() as stack:
            sockets = Path(tmp)
            gateway = None
            if upstream:  # every call passes the host's gateway: pinned, capped, priced, under the run's budget
                client = self.budgeted(ctx)
                gateway = stack.enter_context(Gateway(upstream, client, self.name, sockets / "model.sock", key))
            bridge = stack.enter_context(Bridge(ctx, sockets / "bridge.sock"))
            write_atomic(paths.peer_brief, told.model_dump_json(indent=1))  # host-owned, read-only inside
            env = self.environment(bridge, sockets)
            code, output = run_sandboxed(ctx, python, self.driver(), sockets, env, timeout)
            calls = dict(bridge.calls)
        write_atomic(paths.peer_output, output)
        refused = gateway.refused if gateway is not None and code is not None else None
        if refused and ctx.steps_left() > 0 and not ctx.out_of_time():  # past the wall time: outcome() says so
            detail = f"peer {self.peer}: the gateway refused its model calls: {refused}"
            console.print(f"[yellow]{ctx.agent}[/yellow] on {ctx.task.name}: {detail}")
            return Outcome(stop=StopReason.MODEL_BUDGET, detail=detail)
        return self.outcome(ctx, code, calls, output, timeout)

    def budgeted(self, ctx: RunContext) -> LLMClient:
        """A client of the run's model that never calls it (the peer's own client does, through the
        gateway) but prices, counts and records those calls under the run's budget, which holds the
        peer's call cap too (option `model_calls`, default 10 per step + 10): the host, not the peer,
        ends a peer that keeps asking."""
        config = ctx.llm_config("peer")
        calls = int(ctx.options.get("model_calls", 10 * ctx.steps + 10))
        if config.budget.calls is None or config.budget.calls > calls:
            config.budget = config.budget.model_copy(update={"calls": calls})
        model = ctx.model or ""
        tracker = tracker_for_run(ctx.ws.paths.root, config.budget)
        return LLMClient(config, None, tracker, role=self.name, priced=not backend_kind(model).local)

    def environment(self, bridge: Bridge, sockets: Path) -> dict[str, str]:
        """What the peer process gets besides the sandbox's own PATH, HOME and TMPDIR: no host variable, no key."""
        return {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
            "AISCI_BRIDGE_TOKEN": bridge.token,
            "AISCI_PEER_DIR": str(bridge.ctx.ws.paths.agent_dir),  # its working folder, the only one it writes
            "AISCI_BRIEF": str(bridge.ctx.ws.paths.peer_brief),
            "AISCI_SOCKETS": str(sockets),
        }

    def outcome(self, ctx: RunContext, code: int | None, calls: dict[str, int], output: str, timeout: float) -> Outcome:
        tail = output[-1500:]
        if code is None:
            detail = f"peer {self.peer} had not ended at its time limit ({timeout:g}s) and was killed"
            stop = StopReason.WALL_TIME
        elif ctx.steps_left() == 0:
            return Outcome(stop=StopReason.STEP_BUDGET, detail=f"peer {self.peer} used its {ctx.steps} steps")
        elif ctx.out_of_time():
            return Outcome(stop=StopReason.WALL_TIME, detail=f"peer {self.peer} used the run's {ctx.wall_time_s:g}s")
        elif code != 0:
            detail, stop = f"peer {self.peer} exited {code}: {cause_of(tail)}", StopReason.AGENT_FAILED
        elif calls["experiment"] == 0:
            detail, stop = f"peer {self.peer} ended without calling the evaluator", StopReason.AGENT_FAILED
        else:
            return Outcome(stop=StopReason.FINISHED, detail=f"peer {self.peer} ended its own run")
        console.print(f"[yellow]{ctx.agent}[/yellow] on {ctx.task.name}: {detail} (see {CELL_WS}/{PEER_OUTPUT})")
        return Outcome(stop=stop, detail=detail)


def cause_of(output: str) -> str:
    """The line of a peer's last output that names why it ended: its last exception (a
    traceback's last line, e.g. litellm's ContextWindowExceededError), else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b[^:]*:", line)]
    return (errors or lines or ["(no output)"])[-1][:600]


def run_sandboxed(
    ctx: RunContext, python: Path, driver: Path, sockets: Path, env: dict[str, str], timeout: float
) -> tuple[int | None, str]:
    """The driver's exit code (None: killed at `timeout`) and the last of its output (the sandbox's
    pipes, never a file it could write), run in the run's sandbox backend: its interpreter's venv, the
    drivers, the socket folder and the brief read-only, `state/agent/` writable, nothing else; after it
    `state/agent/` is held to the run-wide disk quota (over it, the excess is removed and the run failed)."""
    paths = ctx.ws.paths
    venv = python.parent.parent
    argv = " ".join(shlex.quote(str(a)) for a in (python, DRIVERS / "launch.py", driver, paths.peer_brief))
    sandbox = get_sandbox(ctx.ws.engine.sandbox.settings)
    if sandbox.name == "local":
        console.print(f"[red]{ctx.agent}: the local sandbox is no boundary: the peer process runs on the host[/red]")
    area = quota.WritableArea(f"the peer's {AGENT_DIR}/", paths.agent_dir, quota.laid_out(paths.agent_dir))
    result = sandbox.run(
        [f"exec {argv} 2>&1"],
        cwd=paths.agent_dir,
        timeout=timeout,
        env=env,
        writable=[paths.agent_dir],
        readonly=list(dict.fromkeys([venv, DRIVERS, driver.parent, sockets, paths.peer_brief])),  # docker: once each
        hidden=[*ctx.task.agent_hidden_paths(), paths.pristine],
    )
    output = result.stdout_tail + result.stderr_tail  # the sandbox's own words (an engine error) come last
    over, _ = quota.enforce_areas(ctx.task.sandbox, [area])  # the excess removed; the run ends failed
    output += f"\n{FailureCause.DISK_QUOTA.value}: {over}" if over else ""
    if result.timed_out:
        return None, output
    if over:
        return 1, output
    if result.out_of_memory:
        output += f"\n{result.failure()}"
    return (result.returncodes[-1] if result.returncodes else -1), output


__all__ = ["PeerAgent", "PeerBrief", "PeerEnvError", "PeerModel", "brief", "peer_model"]
