"""PROTECTED prediction harness (the run side of the run / score split): fit the editable
model on the training split and predict the split's labels
and save them to predictions.npz; the protected evaluate.py scores that file in a sandbox of its
own, where none of this task's editable code is importable.

    python predict.py --split val   |   python predict.py --split test
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import adversarial
import data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small model: a second thread only adds contention
    if args.split == "test":  # the hidden test's run gets the test features only (data.test_inputs)
        X, s = data.test_inputs()
    else:
        split = data.load(args.split)
        X, s = split.X, split.s
    train = data.load("train")
    model = adversarial.fit(train.X.copy(), train.y.copy(), train.s.copy(), seed=data.run_seed())
    pred = np.asarray(model.predict(X.copy(), s.copy())).astype(np.int64).ravel()
    np.savez("predictions.npz", pred=pred)


if __name__ == "__main__":
    main()
