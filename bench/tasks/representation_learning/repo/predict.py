"""PROTECTED prediction harness (the run side of the run / score split): embed the probe's
training and evaluation images with the trained encoder (encoder.pt)
and save them to predictions.npz; the protected evaluate.py scores that file in a sandbox of its
own, where none of this task's editable code is importable.

    python predict.py --split val   |   python predict.py --split test
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from data import THREADS, probe_eval, probe_train, test_inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    # the hidden test's run gets the test images only (data.test_inputs)
    eval_x = test_inputs() if args.split == "test" else probe_eval(args.split)[0]
    train_x, _ = probe_train()
    encoder = torch.load("encoder.pt", weights_only=False)
    encoder.eval()
    np.savez("predictions.npz", train=features(encoder, train_x).numpy(), eval=features(encoder, eval_x).numpy())


def features(encoder: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([encoder(chunk).flatten(1) for chunk in images.split(1000)])


if __name__ == "__main__":
    main()
