"""Few-shot episodes on MNIST digits the backbone never saw.

The backbone (backbone.py) was pre-trained on the base classes 0-4 only
(pretrain_backbone.py, MNIST training images). Few-shot episodes are drawn from
the novel classes 5-9: each episode has N_WAY classes, N_SHOT labelled support
images per class and N_QUERY query images per class to classify.

Protected: the class split, the episode sampler and the evaluation images are
part of the task definition. Validation episodes use MNIST validation images; the
test episodes use MNIST test images with a sampling seed read from
heldout/test_episodes.json, a file that exists only when the hidden test runs.
The hidden test's run gets only the episodes' images and support labels (the
novel-class test images and, per episode, indices into them), exported by
`python data.py` in an invocation of its own (the task's `test_prepare`): the
seed would give the query labels away. Query images come in pool order, not
grouped by label.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import json
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

SMOKE = os.environ.get("FML_CPU8_SMOKE") == "1"
SEED = int(os.environ.get("FML_CPU8_SEED", "0"))
# One thread by default: on a shared, busy CPU more threads make torch much slower.
THREADS = int(os.environ.get("FML_CPU8_THREADS", "1"))

BASE_CLASSES = (0, 1, 2, 3, 4)
NOVEL_CLASSES = (5, 6, 7, 8, 9)
N_WAY, N_SHOT, N_QUERY = 5, 1, 15
N_EPISODES = 50 if SMOKE else 1000
HELDOUT = Path(__file__).resolve().parent / "heldout" / "test_episodes.json"
TEST_INPUTS = HELDOUT.parents[1] / "test_inputs.npz"


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


@dataclass(frozen=True)
class EpisodeSet:
    """Episodes as indices into one pool of images; labels are 0..N_WAY-1 in each episode."""

    images: torch.Tensor  # (n_pool, 1, 28, 28)
    support: np.ndarray  # (n_episodes, N_WAY * N_SHOT) pool indices
    support_y: np.ndarray  # (n_episodes, N_WAY * N_SHOT)
    query: np.ndarray  # (n_episodes, N_WAY * N_QUERY) pool indices, ascending (not grouped by label)
    query_y: np.ndarray | None  # (n_episodes, N_WAY * N_QUERY); None in the hidden test's run


def episode_set(split: str, n_episodes: int = N_EPISODES) -> EpisodeSet:
    """N_WAY-way N_SHOT-shot episodes of `split`."""
    x, y, seed = novel_pool(split)
    rng = np.random.default_rng(seed)
    by_class = {c: np.flatnonzero(y.numpy() == c) for c in NOVEL_CLASSES}
    support, support_y, query, query_y = [], [], [], []
    for _ in range(n_episodes):
        classes = rng.choice(NOVEL_CLASSES, N_WAY, replace=False)
        s, q = [], []
        for c in classes:
            picked = rng.choice(by_class[int(c)], N_SHOT + N_QUERY, replace=False)
            s.append(picked[:N_SHOT])
            q.append(picked[N_SHOT:])
        order = np.argsort(np.concatenate(q))
        support.append(np.concatenate(s))
        support_y.append(np.arange(N_WAY).repeat(N_SHOT))
        query.append(np.concatenate(q)[order])
        query_y.append(np.arange(N_WAY).repeat(N_QUERY)[order])
    return EpisodeSet(x, *(np.stack(a).astype(np.int64) for a in (support, support_y, query, query_y)))


def episodes(split: str, n_episodes: int = N_EPISODES) -> Iterator[Episode]:
    """The episodes of `split` one by one: support images and labels, query images and labels."""
    eps = episode_set(split, n_episodes)
    for s, sy, q, qy in zip(eps.support, eps.support_y, eps.query, eps.query_y):
        yield eps.images[s], torch.from_numpy(sy), eps.images[q], torch.from_numpy(qy)


def export_test_inputs(folder: Path) -> None:
    """The test episodes without their query labels."""
    eps = episode_set("test")
    arrays = {"images": eps.images.numpy(), "support": eps.support, "support_y": eps.support_y, "query": eps.query}
    np.savez(folder / TEST_INPUTS.name, **arrays)


def test_inputs() -> EpisodeSet:
    """The test episodes (query_y None), as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        arrays = [found[k] for k in ("support", "support_y", "query")]
        return EpisodeSet(torch.from_numpy(found["images"]), *arrays, query_y=None)


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
