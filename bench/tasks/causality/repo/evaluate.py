"""PROTECTED evaluation: estimate the ATE on every data set of a split and write
FML-bench's final_info.json with the absolute percentage error of the ATE.

    python evaluate.py --split val                              # validation
    python evaluate.py --split test --out final_info_test.json  # hidden test
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch

import data
import train

DATASET = "setup_a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--out", default="final_info.json")
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny models: a second thread only adds contention
    start = time.time()
    errors, abs_errors = [], []
    for i, ds in enumerate(data.load_split(args.split)):
        estimate = float(train.estimate_ate(ds.X.copy(), ds.w.copy(), ds.y.copy(), seed=1000 * data.run_seed() + i))
        if not math.isfinite(estimate):
            raise SystemExit(f"data set {i}: the estimator returned a non-finite ATE ({estimate})")
        abs_errors.append(abs(estimate - ds.true_ate))
        errors.append(abs(estimate - ds.true_ate) / abs(ds.true_ate))
        print(f"[{args.split} {i}] ate_hat={estimate:.4f} true={ds.true_ate:.4f} abs_pct_error={errors[-1]:.4f}", flush=True)
    values = {"abs_pct_error_of_ate": errors, "abs_error_of_ate": abs_errors}
    info = {
        DATASET: {
            "means": {f"{k}_mean": float(np.mean(v)) for k, v in values.items()},
            "stderrs": {f"{k}_stderr": float(np.std(v) / math.sqrt(len(v))) for k, v in values.items()},
            "final_info_dict": values,
        }
    }
    with open(args.out, "w") as handle:
        json.dump(info, handle, indent=2)
    print(f"{args.split}: abs_pct_error_of_ate={np.mean(errors):.4f} ({time.time() - start:.1f}s)")


if __name__ == "__main__":
    main()
