"""PROTECTED prediction harness (the run side of the run / score split): train on the
poisoned data with the editable method, predict every evaluation image clean and
triggered (the scorer keeps the triggered non-target ones: which those are is a label)
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
    torch.set_num_threads(1)  # small model: a second thread only adds contention
    # the hidden test's run gets the clean test images only (data.test_inputs)
    x = data.test_inputs() if args.split == "test" else data.eval_split(args.split)[0]
    poisoned = data.poisoned_train()
    classifier = train.fit(poisoned.x.copy(), poisoned.y.copy(), seed=data.run_seed())
    clean = np.asarray(classifier.predict(x))
    triggered = np.asarray(classifier.predict(data.add_trigger(x)))
    np.savez("predictions.npz", clean=clean, triggered=triggered)


if __name__ == "__main__":
    main()
