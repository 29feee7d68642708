"""PROTECTED evaluation: fit the classifier on the training split, predict on
the validation (or held-out test) split and write final_info.json with the
absolute average odds difference and the accuracy.

    python evaluate.py --split val
    python evaluate.py --split test --out final_info_test.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import adversarial
import data
from fairness_metrics import group_metrics

DATASET = "census"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--out", default="final_info.json")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small model: a second thread only adds contention
    start = time.time()
    split = data.load(args.split)
    train = data.load("train")
    model = adversarial.fit(train.X.copy(), train.y.copy(), train.s.copy(), seed=data.run_seed())
    pred = np.asarray(model.predict(split.X.copy(), split.s.copy())).astype(np.int64).ravel()
    if pred.shape != split.y.shape or not np.isin(pred, [0, 1]).all():
        raise SystemExit(f"predict must return one 0/1 label per row ({len(split.y)}), got shape {pred.shape}")
    values = group_metrics(split.y, pred, split.s)
    info = {
        DATASET: {
            "means": {f"{k}_mean": v for k, v in values.items()},
            "stderrs": {f"{k}_stderr": 0.0 for k in values},
            "final_info_dict": {k: [v] for k, v in values.items()},
        }
    }
    with open(args.out, "w") as handle:
        json.dump(info, handle, indent=2)
    print(f"{args.split}: " + " ".join(f"{k}={v:.4f}" for k, v in values.items()) + f" ({time.time() - start:.1f}s)")


if __name__ == "__main__":
    main()
