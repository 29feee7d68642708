"""PROTECTED: MNIST with a pixel-pattern backdoor (BadNets-style, like ART's
`add_pattern_bd` but a full 3x3 patch).

5 % of the training images, drawn from every class except the target, get a
3x3 square of full-intensity pixels one pixel away from the bottom-right corner
and are relabelled as the target class (all-to-one attack). Evaluation uses clean images (clean accuracy) and triggered
images of the non-target classes (attack success rate = share classified as the
target). Validation images come from MNIST's validation split; the held-out test
images from MNIST's test split, chosen by a seed stored in heldout/ (not part of
an agent's workspace). The hidden test's run gets only the clean test images,
exported by `python data.py` in an invocation of its own (the task's
`test_prepare`): the seed would give their labels away. Every evaluation image
is also classified with the trigger; the scorer keeps the non-target ones, so
which images count for the attack success rate (a label) stays with the scorer.
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
TARGET = 0
# (row, col) offsets from the bottom-right corner of the 28x28 image.
PATTERN = [(r, c) for r in (-4, -3, -2) for c in (-4, -3, -2)]


@dataclass(frozen=True)
class Sizes:
    n_train: int = 12_000
    n_eval: int = 2_000
    poison_fraction: float = 0.05


FULL = Sizes()
SMOKE = Sizes(n_train=1_000, n_eval=500)


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


def add_trigger(x: np.ndarray) -> np.ndarray:
    """Copy of `x` (N, 784) with the backdoor pattern set to full intensity."""
    images = x.reshape(-1, 28, 28).copy()
    for r, c in PATTERN:
        images[:, r, c] = 1.0
    return images.reshape(len(x), 784)


@dataclass(frozen=True)
class PoisonedTrain:
    x: np.ndarray          # (n, 784) float32 in [0, 1]
    y: np.ndarray          # (n,) int64 labels, poisoned ones set to TARGET
    is_poison: np.ndarray  # (n,) bool, for analysis only: not passed to the method


def poisoned_train() -> PoisonedTrain:
    s = sizes()
    x_all, y_all = _mnist()[0]
    rng = np.random.default_rng(1_000 + run_seed())
    idx = rng.choice(len(x_all), size=s.n_train, replace=False)
    x, y = x_all[idx].astype(np.float32), y_all[idx].astype(np.int64)
    candidates = np.flatnonzero(y != TARGET)
    poison = rng.choice(candidates, size=int(round(s.poison_fraction * s.n_train)), replace=False)
    x[poison] = add_trigger(x[poison])
    y[poison] = TARGET
    is_poison = np.zeros(len(y), dtype=bool)
    is_poison[poison] = True
    return PoisonedTrain(x=x, y=y, is_poison=is_poison)


def eval_split(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Clean evaluation images and labels of `split` ("val" or "test")."""
    n = sizes().n_eval
    if split == "val":
        x, y = _mnist()[1]
        rng = np.random.default_rng(2_000 + run_seed())
    elif split == "test":
        path = HERE / "heldout" / "test_split.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the test split is only available to the hidden test run")
        x, y = _mnist()[2]
        rng = np.random.default_rng(int(json.loads(path.read_text())["seed"]) + run_seed())
    else:
        raise ValueError(f"unknown split {split!r}; expected 'val' or 'test'")
    idx = rng.choice(len(x), size=n, replace=False)
    return x[idx].astype(np.float32), y[idx].astype(np.int64)


def export_test_inputs(folder: Path) -> None:
    """The clean test images, without their labels."""
    np.savez(folder / TEST_INPUTS.name, x=eval_split("test")[0])


def test_inputs() -> np.ndarray:
    """The clean test images (n, 784), as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        return found["x"]


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
