"""PROTECTED scorer: read predictions.npz (what predict.py left; plain arrays, never
pickles), score it against the split's labels and write FML-bench's final_info.json into
$SCORE_OUT (the score invocation's own output folder; the working folder without it).
It imports no editable code: in the score invocation only the scorer files and
predictions.npz are there.

    python evaluate.py --split val   |   python evaluate.py --split test
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch

from data import N_EPISODES, N_QUERY, N_SHOT, N_WAY, episode_set


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--out", default="final_info.json")
    return parser.parse_args()


def _predictions(*names: str) -> dict[str, np.ndarray]:
    with np.load("predictions.npz", allow_pickle=False) as found:
        missing = [n for n in names if n not in found.files]
        if missing:
            raise SystemExit(f"predictions.npz lacks {', '.join(missing)}")
        arrays = {n: found[n] for n in names}
    for name, array in arrays.items():
        if array.dtype.kind not in "biuf" or not np.all(np.isfinite(array)):
            raise SystemExit(f"predictions.npz: {name} must hold finite numbers")
    return arrays


def _write(args: argparse.Namespace, dataset: str, values: dict[str, list[float]], stderrs: dict[str, float]) -> None:
    info = {
        dataset: {
            "means": {f"{k}_mean": float(np.mean(v)) for k, v in values.items()},
            "stderrs": {f"{k}_stderr": stderrs.get(k, 0.0) for k in values},
            "final_info_dict": values,
        }
    }
    with open(os.path.join(os.environ.get("SCORE_OUT", "."), args.out), "w") as handle:
        json.dump(info, handle, indent=2)
    print(f"{args.split}: " + " ".join(f"{k}={np.mean(v):.4f}" for k, v in values.items()))


def main() -> None:
    args = _args()
    pred = torch.from_numpy(_predictions("pred")["pred"].astype(np.int64))
    if tuple(pred.shape) != (N_EPISODES, N_WAY * N_QUERY):
        raise SystemExit(f"predictions.npz: pred must be ({N_EPISODES}, {N_WAY * N_QUERY}) query labels")
    query_y = torch.from_numpy(episode_set(args.split).query_y)
    accs = [(row == labels).float().mean().item() for row, labels in zip(pred, query_y)]
    acc = torch.tensor(accs)
    mean, ci95 = acc.mean().item(), 1.96 * acc.std().item() / len(accs) ** 0.5
    _write(args, "MNIST_novel", {"accuracy": [mean]}, {"accuracy": ci95})
    print(f"{N_WAY}-way {N_SHOT}-shot over {N_EPISODES} episodes, 95% CI +- {ci95:.4f}")


if __name__ == "__main__":
    main()
