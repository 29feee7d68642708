"""Few-shot episodes on MNIST digits the backbone never saw.

The backbone (backbone.py) was pre-trained on the base classes 0-4 only
(pretrain_backbone.py, MNIST training images). Few-shot episodes are drawn from
the novel classes 5-9: each episode has N_WAY classes, N_SHOT labelled support
images per class and N_QUERY query images per class to classify.

Protected: the class split, the episode sampler and the evaluation images are
part of the task definition. Validation episodes use MNIST validation images; the
test episodes use MNIST test images with a sampling seed read from
heldout/test_episodes.json, a file that exists only when the hidden test runs.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import json
import os
import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

SMOKE = os.environ.get("FML_LITE_SMOKE") == "1"
SEED = int(os.environ.get("FML_LITE_SEED", "0"))
# One thread by default: on a shared, busy CPU more threads make torch much slower.
THREADS = int(os.environ.get("FML_LITE_THREADS", "1"))

BASE_CLASSES = (0, 1, 2, 3, 4)
NOVEL_CLASSES = (5, 6, 7, 8, 9)
N_WAY, N_SHOT, N_QUERY = 5, 1, 15
N_EPISODES = 50 if SMOKE else 1000
HELDOUT = Path(__file__).resolve().parent / "heldout" / "test_episodes.json"


@functools.cache
def _mnist() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(train, valid, test) pairs of MNIST images (n, 784) in [0, 1] and digit labels."""
    path = importlib.resources.files("mnist") / "data" / "mnist.pkl.gz"
    with gzip.open(str(path), "rb") as handle:
        return pickle.load(handle, encoding="latin1")


def _images(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(x.reshape(-1, 1, 28, 28))


def base_data() -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST training images (n, 1, 28, 28) of the base classes and their labels 0-4."""
    x, y = _mnist()[0]
    keep = np.isin(y, BASE_CLASSES)
    return _images(x[keep]), torch.from_numpy(y[keep])


def novel_pool(split: str) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Images and labels of the novel classes for `val` or `test`, and the episode seed."""
    if split == "val":
        (x, y), seed = _mnist()[1], 1000 + SEED
    elif split == "test":
        if not HELDOUT.is_file():
            raise FileNotFoundError(f"{HELDOUT} is missing: the test episodes are only available to the hidden test run")
        (x, y), seed = _mnist()[2], json.loads(HELDOUT.read_text())["seed"] + SEED
    else:
        raise ValueError(f"unknown split {split!r}; expected val or test")
    keep = np.isin(y, NOVEL_CLASSES)
    return _images(x[keep]), torch.from_numpy(y[keep]), seed


Episode = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]  # support x, support y, query x, query y


def episodes(split: str, n_episodes: int = N_EPISODES) -> Iterator[Episode]:
    """N_WAY-way N_SHOT-shot episodes; labels are renumbered 0..N_WAY-1 in each episode."""
    x, y, seed = novel_pool(split)
    rng = np.random.default_rng(seed)
    by_class = {c: np.flatnonzero(y.numpy() == c) for c in NOVEL_CLASSES}
    for _ in range(n_episodes):
        classes = rng.choice(NOVEL_CLASSES, N_WAY, replace=False)
        support, query = [], []
        for c in classes:
            picked = rng.choice(by_class[int(c)], N_SHOT + N_QUERY, replace=False)
            support.append(picked[:N_SHOT])
            query.append(picked[N_SHOT:])
        s, q = np.concatenate(support), np.concatenate(query)
        labels = torch.arange(N_WAY)
        yield x[s], labels.repeat_interleave(N_SHOT), x[q], labels.repeat_interleave(N_QUERY)
