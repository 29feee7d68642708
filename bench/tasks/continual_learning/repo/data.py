"""Split MNIST for class-incremental learning: five contexts of two digits each.

The model sees the contexts one after the other ({0,1}, {2,3}, ..., {8,9}) and
never returns to an earlier one. It has a single 10-way output layer, so after
the last context it must tell all ten digits apart (the class-incremental
scenario of van de Ven, Tuytelaars & Tolias, 2022).

Protected: the contexts, the training data and the evaluation splits are part of
the task definition. Validation images come from MNIST's validation part; the
test images are a held-out subset of the official MNIST test part whose
selection is read from heldout/test_split.json, a file that exists only when
the hidden test runs. The hidden test's run gets only the test images, in that
held-out order (digits mixed), exported by `python data.py` in an invocation of
its own (the task's `test_prepare`): the selection would give the labels away,
and so would images grouped by context. Predictions are made on all evaluation
images at once; the scorer groups them by context.
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

SMOKE = os.environ.get("FML_CPU8_SMOKE") == "1"
SEED = int(os.environ.get("FML_CPU8_SEED", "0"))
# One thread by default: on a shared, busy CPU more threads make torch much slower.
THREADS = int(os.environ.get("FML_CPU8_THREADS", "1"))

CONTEXTS: tuple[tuple[int, int], ...] = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))
TRAIN_PER_CONTEXT = 1000 if SMOKE else None  # None: every training image of the context's digits
EVAL_SIZE = 1000 if SMOKE else 10000
HELDOUT = Path(__file__).resolve().parent / "heldout" / "test_split.json"
TEST_INPUTS = HELDOUT.parents[1] / "test_inputs.npz"

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
    return _by_context(*(t.numpy() for t in eval_split(split)), None)


def eval_split(split: str) -> Context:
    """`val` or `test` images (n, 784) of all contexts, digits mixed, and their labels."""
    if split == "val":
        valid = _mnist()[1]
        return torch.from_numpy(valid[0][:EVAL_SIZE]), torch.from_numpy(valid[1][:EVAL_SIZE])
    if split == "test":
        if not HELDOUT.is_file():
            raise FileNotFoundError(f"{HELDOUT} is missing: the test split is only available to the hidden test run")
        spec = json.loads(HELDOUT.read_text())
        test = _mnist()[2]
        idx = np.random.default_rng(spec["seed"]).permutation(len(test[1]))[: min(EVAL_SIZE, spec["size"])]
        return torch.from_numpy(test[0][idx]), torch.from_numpy(test[1][idx])
    raise ValueError(f"unknown split {split!r}; expected train, val or test")


def export_test_inputs(folder: Path) -> None:
    """The test images in their held-out order, without their labels."""
    np.savez(folder / TEST_INPUTS.name, x=eval_split("test")[0].numpy())


def test_inputs() -> torch.Tensor:
    """The test images (n, 784), as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        return torch.from_numpy(found["x"])


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
