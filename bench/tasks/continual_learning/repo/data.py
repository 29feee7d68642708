"""Split MNIST for class-incremental learning: five contexts of two digits each.

The model sees the contexts one after the other ({0,1}, {2,3}, ..., {8,9}) and
never returns to an earlier one. It has a single 10-way output layer, so after
the last context it must tell all ten digits apart (the class-incremental
scenario of van de Ven, Tuytelaars & Tolias, 2022).

Protected: the contexts, the training data and the evaluation splits are part of
the task definition. Validation images come from MNIST's validation part; the
test images are a held-out subset of the official MNIST test part whose
selection is read from heldout/test_split.json, a file that exists only when
the hidden test runs.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import json
import os
import pickle
from pathlib import Path

import numpy as np
import torch

SMOKE = os.environ.get("FML_LITE_SMOKE") == "1"
SEED = int(os.environ.get("FML_LITE_SEED", "0"))
# One thread by default: on a shared, busy CPU more threads make torch much slower.
THREADS = int(os.environ.get("FML_LITE_THREADS", "1"))

CONTEXTS: tuple[tuple[int, int], ...] = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))
TRAIN_PER_CONTEXT = 1000 if SMOKE else None  # None: every training image of the context's digits
EVAL_SIZE = 1000 if SMOKE else 10000
HELDOUT = Path(__file__).resolve().parent / "heldout" / "test_split.json"

Context = tuple[torch.Tensor, torch.Tensor]  # images (n, 784) in [0, 1], digit labels (n,)


@functools.cache
def _mnist() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(train, valid, test) pairs of MNIST images (n, 784) in [0, 1] and digit labels."""
    path = importlib.resources.files("mnist") / "data" / "mnist.pkl.gz"
    with gzip.open(str(path), "rb") as handle:
        return pickle.load(handle, encoding="latin1")


def _by_context(images: np.ndarray, labels: np.ndarray, limit: int | None) -> list[Context]:
    contexts = []
    for digits in CONTEXTS:
        idx = np.flatnonzero(np.isin(labels, digits))[:limit]
        contexts.append((torch.from_numpy(images[idx]), torch.from_numpy(labels[idx])))
    return contexts


def load_contexts(split: str) -> list[Context]:
    """`train`, `val` or `test` data, one (images, labels) pair per context, in order."""
    if split == "train":
        return _by_context(*_mnist()[0], TRAIN_PER_CONTEXT)
    if split == "val":
        valid = _mnist()[1]
        return _by_context(valid[0][:EVAL_SIZE], valid[1][:EVAL_SIZE], None)
    if split == "test":
        if not HELDOUT.is_file():
            raise FileNotFoundError(f"{HELDOUT} is missing: the test split is only available to the hidden test run")
        spec = json.loads(HELDOUT.read_text())
        test = _mnist()[2]
        idx = np.random.default_rng(spec["seed"]).permutation(len(test[1]))[: min(EVAL_SIZE, spec["size"])]
        return _by_context(test[0][idx], test[1][idx], None)
    raise ValueError(f"unknown split {split!r}; expected train, val or test")
