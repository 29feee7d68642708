"""PROTECTED prediction harness (the run side of the run / score split): estimate the ATE
of every data set of a split with the editable estimator
and save them to predictions.npz; the protected evaluate.py scores that file in a sandbox of its
own, where none of this task's editable code is importable.

    python predict.py --split val   |   python predict.py --split test
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import data
import train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny models: a second thread only adds contention
    # the hidden test's run gets the test data sets' (X, w, y) only (data.test_inputs)
    sets = data.test_inputs() if args.split == "test" else [(ds.X, ds.w, ds.y) for ds in data.load_split(args.split)]
    estimates = []
    for i, (X, w, y) in enumerate(sets):
        estimates.append(float(train.estimate_ate(X.copy(), w.copy(), y.copy(), seed=1000 * data.run_seed() + i)))
        print(f"[{args.split} {i}] ate_hat={estimates[-1]:.4f}", flush=True)
    np.savez("predictions.npz", ate=np.asarray(estimates, dtype=np.float64))


if __name__ == "__main__":
    main()
