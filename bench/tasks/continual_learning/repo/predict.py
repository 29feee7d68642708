"""PROTECTED prediction harness (the run side of the run / score split): classify every
context's images with the trained model (checkpoint.pt)
and save them to predictions.npz; the protected evaluate.py scores that file in a sandbox of its
own, where none of this task's editable code is importable.

    python predict.py --split val   |   python predict.py --split test
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from data import THREADS, load_contexts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    model = torch.load("checkpoint.pt", weights_only=False)
    model.eval()
    with torch.no_grad():
        preds = {f"context_{i}": model(x).argmax(1).numpy() for i, (x, _) in enumerate(load_contexts(args.split))}
    np.savez("predictions.npz", **preds)


if __name__ == "__main__":
    main()
