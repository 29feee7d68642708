"""MNIST for self-supervised pre-training and linear-probe evaluation.

Pre-training sees unlabelled MNIST training images. The linear probe is fitted
on a small labelled subset (PROBE_PER_CLASS images per digit) of the training
images and scored on MNIST validation images (`val`) or on a held-out subset of
the official MNIST test images (`test`), selected with a seed read from
heldout/test_split.json, a file that exists only when the hidden test runs.

Protected: the splits are part of the task definition. The hidden test's run
gets only the test images, exported by `python data.py` in an invocation of its
own (the task's `test_prepare`): the selection would give their labels away.
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

PRETRAIN_SIZE = 2000 if SMOKE else 40000
PROBE_PER_CLASS = 20 if SMOKE else 200
EVAL_SIZE = 1000 if SMOKE else 10000
HELDOUT = Path(__file__).resolve().parent / "heldout" / "test_split.json"
TEST_INPUTS = HELDOUT.parents[1] / "test_inputs.npz"


@functools.cache
def _mnist() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(train, valid, test) pairs of MNIST images (n, 784) in [0, 1] and digit labels."""
    path = importlib.resources.files("mnist") / "data" / "mnist.pkl.gz"
    with gzip.open(str(path), "rb") as handle:
        return pickle.load(handle, encoding="latin1")


def _images(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x).reshape(-1, 1, 28, 28))


def unlabelled() -> torch.Tensor:
    """Images (n, 1, 28, 28) for self-supervised pre-training, without labels."""
    return _images(_mnist()[0][0][:PRETRAIN_SIZE])


def probe_train() -> tuple[torch.Tensor, torch.Tensor]:
    """The small labelled set the linear probe is fitted on (the last training images)."""
    x, y = _mnist()[0]
    pool = np.arange(len(y) - 10000, len(y))
    idx = np.concatenate([pool[y[pool] == c][:PROBE_PER_CLASS] for c in range(10)])
    return _images(x[idx]), torch.from_numpy(y[idx])


def probe_eval(split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Images and labels the fitted probe is scored on."""
    if split == "val":
        valid = _mnist()[1]
        return _images(valid[0][:EVAL_SIZE]), torch.from_numpy(valid[1][:EVAL_SIZE])
    if split == "test":
        if not HELDOUT.is_file():
            raise FileNotFoundError(f"{HELDOUT} is missing: the test split is only available to the hidden test run")
        spec = json.loads(HELDOUT.read_text())
        test = _mnist()[2]
        idx = np.random.default_rng(spec["seed"]).permutation(len(test[1]))[: min(EVAL_SIZE, spec["size"])]
        return _images(test[0][idx]), torch.from_numpy(test[1][idx])
    raise ValueError(f"unknown split {split!r}; expected val or test")


def export_test_inputs(folder: Path) -> None:
    """The test images the probe is scored on, without their labels."""
    np.savez(folder / TEST_INPUTS.name, x=probe_eval("test")[0].numpy())


def test_inputs() -> torch.Tensor:
    """The test images (n, 1, 28, 28), as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        return torch.from_numpy(found["x"])


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
