"""PROTECTED prediction harness (the run side of the run / score split): train the target
model on the members, take its class probabilities on members and non-members
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
    # the hidden test's run gets the test non-members' images only (data.test_inputs)
    x_out = data.test_inputs() if args.split == "test" else data.nonmembers(args.split)[0]
    x_in, y_in = data.members()
    model = train.fit(x_in.copy(), y_in.copy(), seed=data.run_seed())
    np.savez(
        "predictions.npz", p_in=np.asarray(model.predict_proba(x_in)), p_out=np.asarray(model.predict_proba(x_out))
    )


if __name__ == "__main__":
    main()
