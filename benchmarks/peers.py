"""The peers' released code beside our agents with a real local model (issue #30's benchmark;
not a timed test). Run it alone on the model: `flock /work/scratch/llm.lock python benchmarks/peers.py`.

Serves the model once (llama.cpp; a server already answering at the models-file address is used
as it is), then runs one bench grid per agent into one results folder,
`python -m aiscientist bench run --agents A --tasks T1,T2 --rounds R --steps N --workers 1`,
each stopped after --timeout seconds, its requests recorded in OUT/requests (so `benchmarks/real_model.py
--from OUT` adds valid calls and prefix share), writes `bench report` over all of them and prints per
agent and task, from each round's result.json and step records (means over rounds):

- best val / base: mean best validation metric against the baseline's; test / base: the hidden test on
  that step against the baseline code's (`*` marks a result better than the baseline);
- improved: rounds whose hidden test beat the baseline code's, of the rounds that ended (the improvement rate);
- steps: run / successful; valid: steps that may count as best (successful, valid metric, constraints met);
- tok/step and s/step: model tokens and wall time over steps run (over 1 if none); TTFE s and exp/h: time
  to first experiment and experiments per hour (records/timing.py);
- vs aiscientist: the hidden test paired by round against `aiscientist` (bench/scoring/paired.py: mean gain,
  positive better, its 95% bootstrap interval, wins; two rounds at least);
- stops: stop reasons other than the budget, with their cause; a cell cut off at --timeout
  (no result.json, no hidden test) is shown from its step and call records.

The research outcome at equal wall time (issue #40): `--wall-time S` gives every agent's cells S seconds of
wall clock each (`bench run --wall-time S`, the peers' own `timeout_s` = S) instead of equal steps; --steps is
then only a cap (default 1000) and --timeout defaults to rounds x tasks x (S + MARGIN_S).

    python benchmarks/peers.py [--agents aiscientist,aide,peer-aide,...] [--tasks tiny,data_efficiency]
                         [--steps 2] [--rounds 2] [--wall-time S] [--model local/qwen2.5-coder-1.5b] [--out DIR]
                         [--table-only] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from aiscientist.records.cell import RUNS, BaselinePaths, cell_folders, task_folders

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiscientist.llm.budget import read_records  # noqa: E402
from aiscientist.llm.config import load_llm_config  # noqa: E402
from aiscientist.llm.local import server as local  # noqa: E402
from aiscientist.records.accounting import is_better  # noqa: E402
from aiscientist.records.cell import CellSummary, load_summaries  # noqa: E402
from aiscientist.records.paths import RunPaths  # noqa: E402
from aiscientist.records.step import load_steps  # noqa: E402
from aiscientist.task import Direction  # noqa: E402
from aiscientist.util.humanize import num  # noqa: E402
from bench.scoring.paired import Pairing, paired_comparisons  # noqa: E402

AGENTS = "linear,aide,peer-aide,peer-openevolve,peer-mini-swe-agent,aiscientist"
TINY = ROOT / "tests/fixtures/tiny/task.yaml"
TASKS = "tiny,data_efficiency"  # `tiny`: the test fixture's task; other names: bench/tasks, bench/papers
REFERENCE = "aiscientist"  # the agent every other one is paired against
WALL_STEPS = 1000  # the step cap under --wall-time: time, not steps, ends a cell
MARGIN_S = 120.0  # a cell's time beyond --wall-time in the grid's --timeout: setup, the baselines, the hidden test


def run_grid(agent: str, args: argparse.Namespace) -> float:
    """One agent's cells; the wall time. Past --timeout the grid is interrupted (unfinished cells leave no result)."""
    command = [
        sys.executable, "-m", "aiscientist", "--record", str(args.out / "requests"),  # read by real_model.py --from
        "bench", "run", "--agents", agent, "--tasks", args.tasks,
        "--rounds", str(args.rounds), "--steps", str(args.steps), "--model", args.model, "--out", str(args.out),
        "--workers", "1", "--no-progress", "--no-report",
    ]  # fmt: skip
    command += ["--wall-time", f"{args.wall_time:g}"] if args.wall_time else []
    if agent.startswith("peer-"):  # the peer's own limit per cell: the wall time, else a little inside ours
        cells = args.rounds * len(args.tasks.split(","))
        limit = args.wall_time or max(60.0, args.timeout / cells - 30)
        command += ["--option", f"{agent}.timeout_s={limit:g}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    with (args.out / f"{agent}.log").open("w") as log:
        grid = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            grid.wait(args.timeout)
        except (subprocess.TimeoutExpired, KeyboardInterrupt) as stopped:
            os.killpg(grid.pid, signal.SIGINT)  # its own session: our Ctrl-C does not reach it
            try:
                grid.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(grid.pid, signal.SIGKILL)
                grid.wait()
            if isinstance(stopped, KeyboardInterrupt):
                raise
    return time.monotonic() - started


def serve(model: str, restart: bool = False) -> None:
    """The local model's server; with `restart`, a new one when the one there is still busy with
    the request of an agent that was cut off (llama.cpp answers one request at a time)."""
    config = load_llm_config(model)
    if not (model.startswith("local/") and config.api_base and config.gguf):
        return
    if restart and not local.answers(config.api_base, timeout_s=10):
        stale = local._started.pop(config.api_base, None)
        if stale is not None:
            stale.stop()
    local.ensure_server(config.api_base, config.gguf, model.removeprefix("local/"), config.context_window or 8192)


def versus(value: float | None, base: float | None, direction: Direction) -> str:
    mark = "*" if value is not None and base is not None and is_better(value, base, direction) else ""
    return f"{num(value)}{mark} / {num(base)}"


def mean(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return sum(found) / len(found) if found else None


def improved(runs: list[CellSummary]) -> str:
    """Rounds whose hidden test beat the baseline code's hidden test, of the rounds that ended."""
    better = [
        r.result.test_metric is not None
        and r.baseline_test is not None
        and is_better(r.result.test_metric, r.baseline_test, r.direction)
        for r in runs
    ]
    return f"{sum(better)} / {len(better)}"


def paired(agent: str, task: str, pairings: list[Pairing]) -> str:
    """`agent` against REFERENCE on `task`, paired by round (positive: `agent` better)."""
    for p in pairings:
        if p.task == task and {p.a, p.b} == {agent, REFERENCE} and agent != REFERENCE:
            sign, wins = (1, p.win_rate) if p.a == agent else (-1, 1 - p.win_rate)
            # + 0.0: a tie turned round by the sign is -0.0, printed "-0"
            low, high = sorted((sign * p.low + 0.0, sign * p.high + 0.0))
            mean = sign * p.mean_diff + 0.0
            verdict = "better" if low > 0 else "worse" if high < 0 else "within noise"
            return f"{mean:+.4g} [{low:+.4g}, {high:+.4g}], wins {wins:.0%}, {p.rounds} rounds: {verdict}"
    return "-"


def row(agent: str, task: str, runs: list[CellSummary], out: Path, args: argparse.Namespace, pairs: str) -> list[str]:
    if not runs:
        return cut_off(agent, task, out, args.timeout)
    first = runs[0]
    steps = [s for r in runs for s in load_steps(r.cell(out).run)]
    done = sum(r.result.steps_completed for r in runs)
    reasons = [(getattr(r.result.stop_reason, "value", r.result.stop_reason), r.result.stop_detail[:120]) for r in runs]
    budget = ("step_budget", "wall_time") if args.wall_time else ("step_budget",)
    stops = sorted({f"{reason}: {detail}" for reason, detail in reasons if reason not in budget})
    return [
        agent,
        task,
        versus(mean([r.result.best_metric for r in runs]), first.result.baseline, first.direction),
        versus(mean([r.result.test_metric for r in runs]), first.baseline_test, first.direction),
        improved(runs),
        f"{done} / {sum(r.result.steps_successful for r in runs)}",
        num(sum(s.eligible for s in steps)),
        num(sum(r.result.tokens for r in runs) / max(done, 1)),
        num(sum(r.result.wall_time_s for r in runs) / max(done, 1)),
        num(mean([r.result.ttfe_s for r in runs])),
        num(mean([r.result.experiments_per_hour for r in runs])),
        pairs,
        "; ".join(stops) or "-",
    ]


def cut_off(agent: str, task: str, out: Path, timeout: float) -> list[str]:
    """A cell stopped at --timeout leaves no result.json: what its step and call records say (no hidden test ran)."""
    folders = [c.ws for c in cell_folders(out, task, agent) if c.ws.is_dir()]
    if not folders:
        return [agent, task, "-", "-", "-", "0 / 0", "0", "-", "-", "-", "-", "-", "not started (see the agent's log)"]
    steps = [s for ws in folders for s in load_steps(RunPaths(ws))]
    calls = [c for ws in folders if RunPaths(ws).llm_calls.is_file() for c in read_records(RunPaths(ws).llm_calls)]
    tokens = sum(int(c.get("prompt_tokens") or 0) + int(c.get("completion_tokens") or 0) for c in calls)
    good = [s.metric for s in steps if s.eligible and s.metric is not None]
    base = json.loads(BaselinePaths.of(out, task).record.read_text())
    direction = load_task_direction(folders[0])
    best = (min if direction == "min" else max)(good, default=None)
    return [
        agent,
        task,
        versus(best, base.get("val"), direction),
        f"- / {num(base.get('test'))}",
        "-",
        f"{len(steps)} / {sum(s.success for s in steps)}",
        num(len(good)),
        num(tokens / max(len(steps), 1)),
        "-",
        "-",
        "-",
        "-",
        f"cut off at the agent's --timeout ({num(timeout)} s): {len(calls)} model calls answered, no result.json",
    ]


def load_task_direction(ws: Path) -> Direction:
    task = json.loads(RunPaths(ws).task_record.read_text())
    return (task.get("metric") or {}).get("direction", "max")


COLUMNS = ("agent", "task", "best val / base", "test / base", "improved", "steps run / ok", "valid", "tok/step")
COLUMNS += ("s/step", "TTFE s", "exp/h", f"vs {REFERENCE} (test, paired)", "stops other than the budget")


def rows(out: Path, agents: list[str], args: argparse.Namespace) -> list[list[str]]:
    """One row per task and agent (COLUMNS)."""
    runs = load_summaries(out)
    pairings = paired_comparisons([r for r in runs if r.agent in agents])
    found = []
    for task in [p.name for p in task_folders(out)]:
        for agent in agents:
            cells = [r for r in runs if r.task == task and r.agent == agent]
            found.append(row(agent, task, cells, out, args, paired(agent, task, pairings)))
    return found


def table(found: list[list[str]], args: argparse.Namespace) -> Table:
    per_cell = f"{num(args.wall_time)} s per cell, steps capped at {args.steps}" if args.wall_time else ""
    title = f"peers beside ours: {args.model}, {per_cell or f'{args.steps} steps'}, {args.rounds} rounds"
    shown = Table(title=f"{title} (means over rounds)", show_lines=True)
    for column in COLUMNS:
        shown.add_column(column)
    for cells in found:
        shown.add_row(*cells)
    return shown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", default=AGENTS)
    parser.add_argument("--tasks", default=TASKS, help="comma-separated task names or task.yaml paths")
    parser.add_argument("--steps", type=int, help=f"steps per cell (default 2; under --wall-time a cap, {WALL_STEPS})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--wall-time", type=float, metavar="S", help="seconds of wall clock per cell, not steps")
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument(
        "--timeout", type=float, help="seconds one agent's grid may take (default 7200; sized from --wall-time)"
    )
    parser.add_argument("--out", type=Path, help="results folder (default: a new temporary one)")
    parser.add_argument("--table-only", action="store_true", help="only print the table of --out's runs (no report)")
    parser.add_argument("--json", type=Path, help="also write the table's rows here (a list of {column: cell})")
    args = parser.parse_args()
    args.tasks = ",".join(str(TINY) if name == "tiny" else name for name in args.tasks.split(","))
    n_cells = args.rounds * len(args.tasks.split(","))
    args.steps = args.steps or (WALL_STEPS if args.wall_time else 2)
    args.timeout = args.timeout or (n_cells * (args.wall_time + MARGIN_S) if args.wall_time else 7200)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C: the grid stops, the server too (atexit)
    args.out = (args.out or Path(tempfile.mkdtemp(prefix="peers-"))).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    console, agents = Console(width=240), args.agents.split(",")
    for agent in [] if args.table_only else agents:
        serve(args.model, restart=True)
        console.print(f"{agent}: {run_grid(agent, args):.0f} s ({args.out / agent}.log)")
        if not (args.out / RUNS).is_dir():  # the grid refused its arguments: its log's last line says why
            lines = (args.out / f"{agent}.log").read_text(errors="replace").strip().splitlines() or ["(empty log)"]
            console.print(f"{agent}: no cell ran: {lines[-1]}")
            return 2
    if not args.table_only:
        subprocess.run([sys.executable, "-m", "aiscientist", "bench", "report", str(args.out)], cwd=ROOT, check=False)
    found = rows(args.out, agents, args)
    console.print(table(found, args))
    if args.json:
        args.json.write_text(json.dumps([dict(zip(COLUMNS, cells, strict=True)) for cells in found], indent=1))
    console.print(f"results and report: {args.out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("stopped: the running grid was interrupted (its cells are resumable with the same command)")
        sys.exit(130)
