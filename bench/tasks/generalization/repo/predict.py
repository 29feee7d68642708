"""PROTECTED prediction harness (the run side of the run / score split): classify the
training and shifted environments with the trained model (checkpoint.pt)
and save them to predictions.npz; the protected evaluate.py scores that file in a sandbox of its
own, where none of this task's editable code is importable.

    python predict.py --split val   |   python predict.py --split test
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from data import THREADS, load_environments, test_inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    model = torch.load("checkpoint.pt", weights_only=False)
    model.eval()
    preds = {}
    with torch.no_grad():
        images = [x for x, _ in load_environments("train")]
        # the hidden test's run gets the shifted test images only (data.test_inputs)
        images.append(test_inputs() if args.split == "test" else load_environments(args.split)[0][0])
        for i, x in enumerate(images):
            logits = model(x).reshape(len(x), -1)
            pred = logits.argmax(1).float() if logits.shape[1] == 2 else (logits[:, 0] > 0).float()
            preds[f"env_{i}"] = pred.numpy()
    np.savez("predictions.npz", **preds)


if __name__ == "__main__":
    main()
