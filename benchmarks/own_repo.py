"""The "Done when" of issue #42, measured: a foreign repository goes `task init` -> `task show` ->
`solve --model offline --steps 3`, in quick mode and with `--score`, timed per phase.

The repository is generated: one numpy-only trainer file over 40,000 characters (a small MLP
regressor with the helpers a real single-file trainer accretes), its hyper-parameters in
`main()`'s argparse defaults near the end, printing `val_loss: X`; it also saves its validation
predictions (`val_preds.npy`), which the `--score` variant's protected `evaluate.py` scores
against `val_targets.npy`. Prints, per variant: wall time of each phase, whether the trainer
changed, whether the best step beat the baseline, and result.json's `score_isolated`.

    python benchmarks/own_repo.py [--keep DIR] [--sandbox auto|bwrap|local]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aiscientist.records.paths import RunPaths

RUN = "python trainer.py --max-steps 200"
SCORE = "python evaluate.py --targets val_targets.npy"

HEAD = '''"""A single-file MLP regressor on a synthetic tabular problem (numpy only).

Usage: python trainer.py [--max-steps N] [--lr LR] [--hidden H] ...
Prints the validation loss as `val_loss: X` and saves the validation predictions to val_preds.npy.
"""

import argparse
import math
import time

import numpy as np

SEED = 1234
N_TRAIN, N_VAL, N_FEATURES = 2048, 512, 16


def make_data(seed=SEED):
    """Features, and targets from a fixed smooth function of them plus a little noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N_TRAIN + N_VAL, N_FEATURES))
    w = rng.normal(size=N_FEATURES) / math.sqrt(N_FEATURES)
    y = np.sin(x @ w) + 0.5 * np.tanh(x[:, 0] * x[:, 1]) + 0.05 * rng.normal(size=len(x))
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:], y[N_TRAIN:])
'''

HELPER = '''

def feature_{i}(x, scale={scale}):
    """Feature transform {i}: a clipped, scaled {kind} of column {col} (kept for experiments
    that never made it into the model; the trainer computes it only when asked to)."""
    column = x[:, {col}] * scale
    if "{kind}" == "square":
        out = column ** 2
    elif "{kind}" == "cube":
        out = column ** 3
    elif "{kind}" == "abs":
        out = np.abs(column)
    else:
        out = np.sign(column) * np.sqrt(np.abs(column))
    return np.clip(out, -{clip}, {clip})


def schedule_{i}(step, total, base):
    """Learning-rate schedule {i}: warm-up over {warm} steps, then {kind} decay to {floor} x base."""
    if step < {warm}:
        return base * (step + 1) / {warm}
    progress = (step - {warm}) / max(1, total - {warm})
    return base * ({floor} + (1 - {floor}) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))
'''

MODEL = '''

def init_params(hidden, rng):
    """Weights of a one-hidden-layer MLP, He-initialised."""
    return {
        "w1": rng.normal(size=(N_FEATURES, hidden)) * math.sqrt(2.0 / N_FEATURES),
        "b1": np.zeros(hidden),
        "w2": rng.normal(size=(hidden, 1)) * math.sqrt(1.0 / hidden),
        "b2": np.zeros(1),
    }


def forward(params, x):
    h = np.maximum(0.0, x @ params["w1"] + params["b1"])
    return (h @ params["w2"] + params["b2"])[:, 0], h


def loss_and_grads(params, x, y, weight_decay):
    pred, h = forward(params, x)
    err = pred - y
    loss = float(np.mean(err**2))
    g = 2 * err[:, None] / len(y)
    grads = {"w2": h.T @ g + weight_decay * params["w2"], "b2": g.sum(0)}
    dh = (g @ params["w2"].T) * (h > 0)
    grads["w1"] = x.T @ dh + weight_decay * params["w1"]
    grads["b1"] = dh.sum(0)
    return loss, grads


def train(args):
    (x, y), (xv, yv) = make_data()
    rng = np.random.default_rng(args.seed)
    params = init_params(args.hidden, rng)
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    started = time.time()
    for step in range(args.max_steps):
        idx = rng.integers(0, len(x), size=args.batch_size)
        loss, grads = loss_and_grads(params, x[idx], y[idx], args.weight_decay)
        for k in params:
            velocity[k] = args.momentum * velocity[k] - args.lr * grads[k]
            params[k] += velocity[k]
        if step % args.log_every == 0:
            val = float(np.mean((forward(params, xv)[0] - yv) ** 2))
            print(f"step {step} train_loss {loss:.5f} val {val:.5f} ({time.time() - started:.1f}s)")
    pred = forward(params, xv)[0]
    np.save("val_preds.npy", pred)
    return float(np.mean((pred - yv) ** 2))


def main():
    parser = argparse.ArgumentParser(description="train the MLP regressor")
    parser.add_argument("--max-steps", type=int, default=1000)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    val_loss = train(args)
    print(f"val_loss: {val_loss}")


if __name__ == "__main__":
    main()
'''

EVALUATE = '''"""Scores the trainer's saved validation predictions (protected: the agents cannot change it)."""

import argparse
import json
import os

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--targets", default="val_targets.npy")
args = parser.parse_args()
pred, target = np.load("val_preds.npy"), np.load(args.targets)
value = float(np.mean((pred - target) ** 2))
with open(os.path.join(os.environ["SCORE_OUT"], "final_info.json"), "w") as out:
    json.dump({"synthetic": {"means": {"val_loss_mean": value}}}, out)
'''


def make_repository(folder: Path) -> Path:
    """The foreign repository: trainer.py (> 40,000 characters) and, for --score, evaluate.py
    and the validation targets."""
    folder.mkdir(parents=True)
    kinds = ["square", "cube", "abs", "signed_sqrt"]
    helpers = "".join(
        HELPER.format(
            i=i,
            scale=1 + i % 5,
            kind=kinds[i % 4],
            col=i % 16,
            clip=3 + i % 7,
            warm=10 + i,
            floor=round(0.05 * (1 + i % 4), 2),
        )  # fmt: skip
        for i in range(48)
    )
    (folder / "trainer.py").write_text(HEAD + helpers + MODEL)
    (folder / "evaluate.py").write_text(EVALUATE)
    subprocess.run(
        [sys.executable, "-c", "import numpy, trainer; numpy.save('val_targets.npy', trainer.make_data()[1][1])"],
        cwd=folder, check=True,
    )  # fmt: skip
    return folder


def phase(label: str, argv: list[str], cwd: Path, times: dict[str, float]) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "aiscientist", *argv], cwd=cwd, capture_output=True, text=True)
    times[label] = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{label} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done


def variant(name: str, root: Path, extra: list[str], sandbox: str) -> dict[str, object]:
    repo = make_repository(root / name / "repo")
    original = (repo / "trainer.py").read_text()
    times: dict[str, float] = {}
    cwd = Path(__file__).resolve().parents[1]
    init = ["task", "init", str(repo), "--run", RUN, "--sandbox", sandbox, *extra]
    phase("task init", init, cwd, times)
    phase("task show", ["task", "show", str(repo / "task.yaml"), "--sandbox", sandbox], cwd, times)
    run_dir = root / name / "run"
    solve = ["solve", str(repo / "task.yaml"), "--model", "offline", "--steps", "3", "--run-dir", str(run_dir),
             "--sandbox", sandbox]  # fmt: skip
    phase("solve", solve, cwd, times)
    paths = RunPaths(run_dir)
    result = json.loads(paths.result.read_text())
    best = result.get("best_step")
    changed = False
    if best is not None:
        step = json.loads(paths.step_record(best).read_text())
        code = run_dir / step["code_path"] / "trainer.py"
        changed = code.is_file() and code.read_text() != original
    baseline, best_metric = result.get("baseline"), result.get("best_metric")
    beat = best_metric is not None and baseline is not None and best_metric < baseline
    return {
        "variant": name,
        "trainer_chars": len(original),
        **{f"{k}_s": round(v, 1) for k, v in times.items()},
        "total_s": round(sum(times.values()), 1),
        "baseline": baseline,
        "best_metric": best_metric,
        "best_step": best,
        "trainer_changed": changed,
        "beat_baseline": beat,
        "score_isolated": result.get("score_isolated"),
        "steps_successful": result.get("steps_successful"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the repositories and runs in this folder")
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="own-repo-"))
    try:
        rows = [
            variant("quick", root, ["--metric", "val_loss:min"], args.sandbox),
            variant(
                "split",
                root,
                ["--metric", "synthetic/val_loss:min", "--score", SCORE, "--artifacts", "val_preds.npy"],
                args.sandbox,
            ),
        ]
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    for row in rows:
        print(json.dumps(row))
    return 0 if all(r["trainer_changed"] and r["beat_baseline"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
