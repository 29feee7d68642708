"""PROTECTED scorer: read predictions.npz (what predict.py left; plain arrays, never
pickles), score it against the split's labels and write FML-bench's final_info.json into
$SCORE_OUT (the score invocation's own output folder; the working folder without it).
It imports no editable code: in the score invocation only the scorer files and
predictions.npz are there.

    python evaluate.py --split val   |   python evaluate.py --split test --out final_info_test.json
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

import data


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
    p = _predictions("clean", "triggered")
    _, y = data.eval_split(args.split)
    if p["clean"].shape != y.shape or p["triggered"].shape != y.shape:
        raise SystemExit("predictions.npz: one label per evaluation image, clean and triggered")
    clean_acc = float(np.mean(p["clean"] == y))
    asr = float(np.mean(p["triggered"][y != data.TARGET] == data.TARGET))  # triggered images of other classes
    values = {"defense_score": defense_score(clean_acc, asr), "clean_acc": clean_acc, "attack_success_rate": asr}
    _write(args, "mnist_backdoor", {k: [v] for k, v in values.items()}, {})


def defense_score(clean_acc: float, asr: float) -> float:
    a, b = clean_acc, 1.0 - asr
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


if __name__ == "__main__":
    main()
