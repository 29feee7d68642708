"""Acceptance: on an FML-style task the offline policy has never seen, where only raising
one constant helps, `solve --model offline --steps 8` beats the baseline (each arm)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aiscientist.llm.offline.search import parse_marker

TRAIN = '''
"""Fit y = 2x - 1 by full-batch gradient descent for a fixed number of epochs."""
import json
import random

STEP_SIZE = 0.05
GRAD_CLIP = 4.0
REPORT_WIDTH = 60
USE_BIAS = True


def main() -> None:
    rng = random.Random(0)
    data = [(x, 2 * x - 1 + rng.gauss(0, 0.05)) for x in (i / 20 - 1 for i in range(41))]
    w = b = 0.0
    for _ in range(40):
        gw = sum(2 * (w * x + b - y) * x for x, y in data) / len(data)
        gb = sum(2 * (w * x + b - y) for x, y in data) / len(data) if USE_BIAS else 0.0
        w -= STEP_SIZE * max(-GRAD_CLIP, min(GRAD_CLIP, gw))
        b -= STEP_SIZE * max(-GRAD_CLIP, min(GRAD_CLIP, gb))
    print("-" * REPORT_WIDTH)
    with open("model.json", "w") as handle:
        json.dump({"w": w, "b": b}, handle)


if __name__ == "__main__":
    main()
'''

EVALUATE = '''
"""Protected: validation MSE of model.json, written as FML-bench's final_info.json."""
import json

model = json.load(open("model.json"))
xs = [i / 13 - 1 for i in range(27)]
mse = sum((model["w"] * x + model["b"] - (2 * x - 1)) ** 2 for x in xs) / len(xs)
info = {"means": {"mse_mean": mse}, "stderrs": {"mse_stderr": 0.0}, "final_info_dict": {"mse": [mse]}}
json.dump({"line": info}, open("final_info.json", "w"))
'''


def make_task(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir(parents=True)
    (repo / "train.py").write_text(TRAIN.lstrip())
    (repo / "evaluate.py").write_text(EVALUATE.lstrip())
    subprocess.run([sys.executable, "train.py"], cwd=repo, check=True, capture_output=True)
    subprocess.run([sys.executable, "evaluate.py"], cwd=repo, check=True)
    baseline = json.loads((repo / "final_info.json").read_text())["line"]["means"]["mse_mean"]
    for made in ("model.json", "final_info.json"):
        (repo / made).unlink()
    task = root / "task.yaml"
    task.write_text(
        textwrap.dedent(
            f"""
            name: unseen-line
            description: Fit a line by gradient descent in train.py; evaluate.py scores it (lower MSE is better).
            repository: repo
            editable: [train.py]
            protected: [evaluate.py]
            commands: [python train.py, python evaluate.py]
            metrics_file: final_info.json
            metric: {{dataset: line, name: mse, direction: min}}
            baseline: {baseline!r}
            command_timeout_s: 60
            """
        )
    )
    return task


@pytest.mark.parametrize(
    "arm",
    [[], ["--set", "hierarchy=false"], pytest.param(["--set", "file_bus=false"], marks=pytest.mark.slow)],
    ids=["aiscientist", "flat", "nobus"],
)
def test_offline_policy_beats_the_baseline_on_an_unseen_task_within_8_steps(tmp_path: Path, arm: list[str]) -> None:
    task = make_task(tmp_path / "task")
    run = tmp_path / "run"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "aiscientist",
            "solve",
            str(task),
            "--model",
            "offline",
            "--steps",
            "8",
            "--run-dir",
            str(run),
            *arm,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((run / "result.json").read_text())
    assert result["best_metric"] is not None and result["best_metric"] < result["baseline"], (
        result["best_metric"],
        result["baseline"],
    )
    hypotheses = [json.loads(p.read_text())["hypothesis"] for p in sorted(run.glob("experiments/step_*/step.json"))]
    changes = [parse_marker(h) for h in hypotheses]
    assert None not in changes and len(changes) == len(set(changes)), changes  # no change measured twice
