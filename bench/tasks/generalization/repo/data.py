"""Colored MNIST environments, built as in Arjovsky et al. (2019), "Invariant Risk Minimization".

Each example is an MNIST digit downsampled to 14x14 and put in one of two colour
channels. The label is binary (digit < 5 -> 0, else 1) and flipped with
probability 0.25, so the shape of the digit predicts the label with 75% accuracy.
The colour equals the (noisy) label, flipped with the environment's probability
`e`: colour predicts the label with accuracy 1 - e. Training environments use
e = 0.1 and 0.2 (colour is the easier, spurious cue); the validation and test
environments use e = 0.9 (the correlation is reversed).

Protected: the environments, their sizes and the held-out test split are part of
the task definition. The test environment is built from the official MNIST test
images with parameters read from heldout/test_env.json, a file that exists only
when the hidden test runs. The hidden test's run gets only the coloured test
images, exported by `python data.py` in an invocation of its own (the task's
`test_prepare`): the seed would give the label noise, and so the labels, away.
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

LABEL_NOISE = 0.25
TRAIN_ENVS = (0.1, 0.2)
SHIFTED_ENV = 0.9
TRAIN_PER_ENV = 2000 if SMOKE else 10000
EVAL_SIZE = 1000 if SMOKE else 10000
HELDOUT = Path(__file__).resolve().parent / "heldout" / "test_env.json"
TEST_INPUTS = HELDOUT.parents[1] / "test_inputs.npz"

Environment = tuple[torch.Tensor, torch.Tensor]  # images (n, 2, 14, 14), binary labels (n,) as float


@functools.cache
def _mnist() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(train, valid, test) pairs of MNIST images (n, 784) in [0, 1] and digit labels."""
    path = importlib.resources.files("mnist") / "data" / "mnist.pkl.gz"
    with gzip.open(str(path), "rb") as handle:
        return pickle.load(handle, encoding="latin1")


def make_environment(images: np.ndarray, digits: np.ndarray, e: float, rng: np.random.Generator) -> Environment:
    """Colour `images` so that colour agrees with the noisy label with probability 1 - e."""
    x = images.reshape(-1, 28, 28)[:, ::2, ::2]
    label = (digits >= 5).astype(np.float32)
    label = np.abs(label - (rng.random(len(label)) < LABEL_NOISE))
    colour = np.abs(label - (rng.random(len(label)) < e)).astype(np.int64)
    coloured = np.stack([x, x], axis=1)
    coloured[np.arange(len(x)), 1 - colour] = 0.0
    return torch.from_numpy(coloured.astype(np.float32)), torch.from_numpy(label.astype(np.float32))


def load_environments(split: str) -> list[Environment]:
    """`train`: the two training environments; `val`: the shifted validation
    environment (MNIST validation images); `test`: the shifted test environment
    (MNIST test images), available only with the hidden heldout/ folder."""
    if split == "train":
        train = _mnist()[0]
        rng = np.random.default_rng(0)
        order = rng.permutation(len(train[1]))
        chunks = np.array_split(order[: TRAIN_PER_ENV * len(TRAIN_ENVS)], len(TRAIN_ENVS))
        return [make_environment(train[0][idx], train[1][idx], e, rng) for idx, e in zip(chunks, TRAIN_ENVS)]
    if split == "val":
        valid = _mnist()[1]
        rng = np.random.default_rng(1)
        return [make_environment(valid[0][:EVAL_SIZE], valid[1][:EVAL_SIZE], SHIFTED_ENV, rng)]
    if split == "test":
        if not HELDOUT.is_file():
            raise FileNotFoundError(f"{HELDOUT} is missing: the test environment is only available to the hidden test run")
        spec = json.loads(HELDOUT.read_text())
        test = _mnist()[2]
        rng = np.random.default_rng(spec["seed"])
        return [make_environment(test[0][:EVAL_SIZE], test[1][:EVAL_SIZE], spec["e"], rng)]
    raise ValueError(f"unknown split {split!r}; expected train, val or test")


def export_test_inputs(folder: Path) -> None:
    """The shifted test environment's coloured images, without their labels."""
    np.savez(folder / TEST_INPUTS.name, x=load_environments("test")[0][0].numpy())


def test_inputs() -> torch.Tensor:
    """The test environment's images (n, 2, 14, 14), as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        return torch.from_numpy(found["x"])


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
