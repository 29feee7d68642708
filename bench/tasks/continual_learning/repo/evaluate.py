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

from data import CONTEXTS, eval_split


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
    _, y = eval_split(args.split)
    pred = torch.from_numpy(_predictions("pred")["pred"].astype(np.int64))
    if pred.shape != y.shape:
        raise SystemExit(f"predictions.npz: pred must hold one label per evaluation image ({len(y)})")
    accs = []
    for digits in CONTEXTS:  # each context's accuracy among all ten digits
        mask = torch.isin(y, torch.tensor(digits))
        accs.append((pred[mask] == y[mask]).float().mean().item())
    stderr = float(torch.tensor(accs).std().item() / len(accs) ** 0.5)
    _write(args, "splitMNIST", {"average_acc": accs}, {"average_acc": stderr})


if __name__ == "__main__":
    main()
