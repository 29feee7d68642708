"""PROTECTED prediction harness (the run side of the run / score split): classify the query
images of every episode with the editable classifier
and save them to predictions.npz; the protected evaluate.py scores that file in a sandbox of its
own, where none of this task's editable code is importable.

    python predict.py --split val   |   python predict.py --split test
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from backbone import load_backbone
from data import SEED, THREADS, episode_set, test_inputs
from few_shot import build_classifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["val", "test"], default="val")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    classifier = build_classifier(load_backbone())
    # the hidden test's run gets the episodes without query labels (data.test_inputs)
    eps = test_inputs() if args.split == "test" else episode_set(args.split)
    preds = []
    for support, support_y, query in zip(eps.support, eps.support_y, eps.query):
        classifier.process_support_set(eps.images[support], torch.from_numpy(support_y))
        preds.append(classifier(eps.images[query]).detach().argmax(1).numpy())
    np.savez("predictions.npz", pred=np.stack(preds))


if __name__ == "__main__":
    main()
