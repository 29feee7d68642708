"""FML-bench main's agent set on our kernel (issue #31): run the grid, then print the table
of FML-bench main's own metrics per agent (mean over tasks): normalised improvement,
valid-step ratio, AUC over steps and the step of the first improvement.

    python benchmarks/fml_agents.py                                   # the issue's grid: all tasks, 2 rounds, 8 steps
    python benchmarks/fml_agents.py --tasks tests/fixtures/bench/tiny-r2/task.yaml --out /tmp/fml_agents

Re-running with the same --out continues a killed grid. Tasks without an FML-bench range
(neither FML-bench's own nor a `score_range`) are left out of the table.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path

from bench.fml.export import fml_rows
from bench.grid.runner import resolve_tasks, run_grid
from bench.grid.spec import GridConfig

ROOT = Path(__file__).resolve().parents[1]
AGENTS = "aide,ai-scientist,aira-mcts,openevolve,ai-scientist-v2,autoresearch,adaptive-search,aiscientist"
SHOWN = {
    "Normalized Improvement": "NI",
    "Valid step ratio": "valid-step ratio",
    "AUC-over-steps": "AUC",
    "First-improvement step": "first-improvement step",
}


def mean(values: list[float | None]) -> str:
    real = [v for v in values if v is not None and not math.isnan(v)]
    return f"{statistics.fmean(real):.4g}" if real else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", default=AGENTS)
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--model", default="offline")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "results/fml_agents")
    args = parser.parse_args()
    config = GridConfig(
        agents=args.agents.split(","),
        tasks=resolve_tasks(args.tasks.split(","), ROOT / "bench"),
        rounds=args.rounds,
        steps=args.steps,
        model=args.model,
        workers=args.workers,
        embedder="minilm",
    )
    started = time.monotonic()
    summary = run_grid(config, args.out, progress=False)
    print(
        f"grid: {summary['runs']} runs, {summary['ran']} run now, {len(summary['failed'])} failed, "
        f"{time.monotonic() - started:.0f} s"
    )
    table = fml_rows(args.out, embedder="minilm", explore_code=False, skip_unranged=True)
    tasks = sorted({task for rows in table.values() for task in rows})
    print(f"FML-bench main's metrics, mean over {len(tasks)} task(s): {', '.join(tasks)}")
    print("| agent | " + " | ".join(SHOWN.values()) + " |")
    print("|---|" + "---|" * len(SHOWN))
    for agent in config.agents:
        rows = table.get(agent, {}).values()
        print(f"| {agent} | " + " | ".join(mean([r.get(key) for r in rows]) for key in SHOWN) + " |")


if __name__ == "__main__":
    main()
