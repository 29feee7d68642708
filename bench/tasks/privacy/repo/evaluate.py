"""PROTECTED evaluation: train the target model on the members, attack it, and
write final_info.json with the membership-inference AUC (the strongest attack's)
and the accuracy on non-member data.

    python evaluate.py --split val
    python evaluate.py --split test --out final_info_test.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import attack
import data
import train

DATASET = "mnist"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--out", default="final_info.json")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small model: a second thread only adds contention
    start = time.time()
    x_out, y_out = data.nonmembers(args.split)
    x_in, y_in = data.members()
    model = train.fit(x_in.copy(), y_in.copy(), seed=data.run_seed())
    p_in, p_out = model.predict_proba(x_in), model.predict_proba(x_out)
    for name, p in (("members", p_in), ("non-members", p_out)):
        if p.shape != (len(p), 10) or not np.all(np.isfinite(p)) or not np.allclose(p.sum(1), 1.0, atol=1e-3):
            raise SystemExit(f"predict_proba on {name} must return finite (n, 10) probabilities that sum to 1")
    aucs = attack.attack_aucs(p_in, y_in, p_out, y_out)
    values = {
        "mia_auc": max(aucs.values()),
        **{f"mia_auc_{name}": v for name, v in aucs.items()},
        "accuracy": float(np.mean(p_out.argmax(1) == y_out)),
        "train_accuracy": float(np.mean(p_in.argmax(1) == y_in)),
    }
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
