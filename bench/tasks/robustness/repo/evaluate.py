"""PROTECTED evaluation: train on poisoned MNIST, then measure clean accuracy,
attack success rate and the defence score (their harmonic mean, FML-bench's
definition: 2 * acc * (1 - asr) / (acc + 1 - asr)); writes final_info.json.

    python evaluate.py --split val
    python evaluate.py --split test --out final_info_test.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import data
import train

DATASET = "mnist_backdoor"


def defense_score(clean_acc: float, asr: float) -> float:
    a, b = clean_acc, 1.0 - asr
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--out", default="final_info.json")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small model: a second thread only adds contention
    start = time.time()
    x, y = data.eval_split(args.split)
    poisoned = data.poisoned_train()
    classifier = train.fit(poisoned.x.copy(), poisoned.y.copy(), seed=data.run_seed())
    clean_acc = float(np.mean(classifier.predict(x) == y))
    keep = y != data.TARGET
    asr = float(np.mean(classifier.predict(data.add_trigger(x[keep])) == data.TARGET))
    values = {"defense_score": defense_score(clean_acc, asr), "clean_acc": clean_acc, "attack_success_rate": asr}
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
