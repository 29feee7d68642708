"""PROTECTED: members and non-members for membership inference on MNIST.

Members are the target model's training set: a fixed random subset of MNIST's
training split. Validation non-members (also the validation accuracy set) come
from MNIST's validation split; held-out test non-members from MNIST's test
split, chosen by a seed stored in heldout/ (not part of an agent's workspace).
The hidden test's run gets only the test non-members' images, exported by
`python data.py` in an invocation of its own (the task's `test_prepare`): the
seed would give their labels away, and the attacks score with those labels.
"""

from __future__ import annotations

import gzip
import importlib.resources
import json
import os
import pickle
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEST_INPUTS = HERE / "test_inputs.npz"


@dataclass(frozen=True)
class Sizes:
    n_members: int = 500
    n_nonmembers: int = 2_000


FULL = Sizes()
SMOKE = Sizes(n_members=100, n_nonmembers=400)


def sizes() -> Sizes:
    return SMOKE if os.environ.get("FML_CPU8_SMOKE") == "1" else FULL


def run_seed() -> int:
    return int(os.environ.get("FML_CPU8_SEED", "0"))


@cache
def _mnist() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(train, valid, test) pairs of float32 images in [0, 1] (N, 784) and int labels."""
    path = importlib.resources.files("mnist") / "data" / "mnist.pkl.gz"
    with gzip.open(str(path), "rb") as handle:
        return pickle.load(handle, encoding="latin1")


def _subset(pair: tuple[np.ndarray, np.ndarray], n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    x, y = pair
    idx = np.random.default_rng(seed).choice(len(x), size=n, replace=False)
    return x[idx].astype(np.float32), y[idx].astype(np.int64)


def members() -> tuple[np.ndarray, np.ndarray]:
    """The training set of the target model."""
    return _subset(_mnist()[0], sizes().n_members, 3_000 + run_seed())


def nonmembers(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Images never used in training; also where accuracy is measured."""
    n = sizes().n_nonmembers
    if split == "val":
        return _subset(_mnist()[1], n, 4_000 + run_seed())
    if split == "test":
        path = HERE / "heldout" / "test_split.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the test split is only available to the hidden test run")
        return _subset(_mnist()[2], n, int(json.loads(path.read_text())["seed"]) + run_seed())
    raise ValueError(f"unknown split {split!r}; expected 'val' or 'test'")


def export_test_inputs(folder: Path) -> None:
    """The test non-members' images, without their labels."""
    np.savez(folder / TEST_INPUTS.name, x=nonmembers("test")[0])


def test_inputs() -> np.ndarray:
    """The test non-members' images (n, 784), as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        return found["x"]


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
