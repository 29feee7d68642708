"""PROTECTED: train / validation / test splits of the census data.

Synthetic (default): each split is drawn from the generator in census.py with
its own seed; the test seed lives in heldout/ (not part of an agent's
workspace). The hidden test's run gets only the test features, exported by
`python data.py` in an invocation of its own (the task's `test_prepare`): the
seed would give the labels away. Real Adult (FML_CPU8_ADULT_CSV set): a fixed
60/15/25 permutation of the file's rows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import census

HERE = Path(__file__).resolve().parent
TEST_INPUTS = HERE / "test_inputs.npz"


@dataclass(frozen=True)
class Sizes:
    n_train: int = 60_000
    n_val: int = 40_000
    n_test: int = 40_000


FULL = Sizes()
SMOKE = Sizes(n_train=8_000, n_val=2_000, n_test=2_000)


def sizes() -> Sizes:
    return SMOKE if os.environ.get("FML_CPU8_SMOKE") == "1" else FULL


def run_seed() -> int:
    return int(os.environ.get("FML_CPU8_SEED", "0"))


def _test_seed() -> int:
    path = HERE / "heldout" / "test_split.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the test split is only available to the hidden test run")
    return int(json.loads(path.read_text())["seed"])


def load(split: str) -> census.Table:
    if split not in ("train", "val", "test"):
        raise ValueError(f"unknown split {split!r}; expected 'train', 'val' or 'test'")
    csv_path = os.environ.get("FML_CPU8_ADULT_CSV")
    if csv_path:
        return _adult_split(csv_path, split)
    s = sizes()
    if split == "train":
        return census.synthetic(s.n_train, 6_000 + run_seed())
    if split == "val":
        return census.synthetic(s.n_val, 7_000 + run_seed())
    return census.synthetic(s.n_test, _test_seed() + run_seed())


def export_test_inputs(folder: Path) -> None:
    """The test split's features and sensitive attribute, without its labels."""
    table = load("test")
    np.savez(folder / TEST_INPUTS.name, X=table.X, s=table.s)


def test_inputs() -> tuple[np.ndarray, np.ndarray]:
    """(X, s) of the test split, as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        return found["X"], found["s"]


def _adult_split(csv_path: str, split: str) -> census.Table:
    """A fixed 60/15/25 permutation of the file's rows (the file is the user's
    own copy, so its test quarter is only held out by convention)."""
    table = census.adult_csv(csv_path)
    n = len(table.y)
    order = np.random.default_rng(9_001).permutation(n)
    cut_train, cut_val = int(0.6 * n), int(0.75 * n)
    idx = {"train": order[:cut_train], "val": order[cut_train:cut_val], "test": order[cut_val:]}[split]
    return census.Table(X=table.X[idx], y=table.y[idx], s=table.s[idx], feature_names=table.feature_names)


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
