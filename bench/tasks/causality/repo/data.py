"""Setup A of Nie & Wager (2021), "Quasi-oracle estimation of heterogeneous
treatment effects" (Biometrika), Section 6: difficult nuisance, easy effect.

    X_i ~ U[0, 1]^d
    e(x)   = trim_0.1( sin(pi * x1 * x2) )            propensity P(W=1 | X=x)
    b(x)   = sin(pi * x1 * x2) + 2 (x3 - 0.5)^2 + x4 + 0.5 x5   mean outcome
    tau(x) = (x1 + x2) / 2                             treatment effect
    W_i ~ Bernoulli(e(X_i))
    Y_i = b(X_i) + (W_i - 0.5) tau(X_i) + sigma * eps_i,   eps_i ~ N(0, 1)

with trim_eta(z) = max(eta, min(z, 1 - eta)). The true (sample) ATE of one data
set is mean_i tau(X_i); its population value is 0.5.

PROTECTED: the data generator and the split definition. Validation data sets
use seeds derived from FML_CPU8_SEED; the test seeds live in heldout/, which is
not part of an agent's workspace. The hidden test's run gets only the test data
sets' (X, w, y), exported by `python data.py` in an invocation of its own (the
task's `test_prepare`): the seeds would give the noise and the true propensity
away too. The true ATE stays a known function of X (mean tau(X)), on every split.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEST_INPUTS = HERE / "test_inputs.npz"
TRIM = 0.1


@dataclass(frozen=True)
class Sizes:
    n: int = 2000          # units per data set
    d: int = 6             # covariates
    sigma: float = 0.5     # noise level (Nie & Wager use 0.5, 1, 2, 4)
    replications: int = 6  # independent data sets averaged per evaluation


FULL = Sizes()
SMOKE = Sizes(n=300, replications=1)


def sizes() -> Sizes:
    return SMOKE if os.environ.get("FML_CPU8_SMOKE") == "1" else FULL


def run_seed() -> int:
    return int(os.environ.get("FML_CPU8_SEED", "0"))


@dataclass(frozen=True)
class CausalData:
    X: np.ndarray    # (n, d) covariates
    w: np.ndarray    # (n,) treatment indicator in {0, 1}
    y: np.ndarray    # (n,) observed outcome
    tau: np.ndarray  # (n,) true individual effects (evaluation only)
    e: np.ndarray    # (n,) true propensity (evaluation only)

    @property
    def true_ate(self) -> float:
        return float(self.tau.mean())


def setup_a(n: int, d: int, sigma: float, rng: np.random.Generator) -> CausalData:
    if d < 5:
        raise ValueError(f"Setup A needs d >= 5 covariates, got {d}")
    X = rng.uniform(0.0, 1.0, size=(n, d))
    s = np.sin(np.pi * X[:, 0] * X[:, 1])
    e = np.clip(s, TRIM, 1.0 - TRIM)
    b = s + 2.0 * (X[:, 2] - 0.5) ** 2 + X[:, 3] + 0.5 * X[:, 4]
    tau = (X[:, 0] + X[:, 1]) / 2.0
    w = rng.binomial(1, e).astype(np.float64)
    y = b + (w - 0.5) * tau + sigma * rng.standard_normal(n)
    return CausalData(X=X, w=w, y=y, tau=tau, e=e)


def split_seeds(split: str) -> list[int]:
    """Seeds of the data sets in `split` ("val" or "test")."""
    reps = sizes().replications
    if split == "val":
        return [10_000 + 100 * run_seed() + r for r in range(reps)]
    if split == "test":
        path = HERE / "heldout" / "test_seeds.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the test split is only available to the hidden test run")
        base = int(json.loads(path.read_text())["base_seed"])
        return [base + 100 * run_seed() + r for r in range(reps)]
    raise ValueError(f"unknown split {split!r}; expected 'val' or 'test'")


def load_split(split: str) -> list[CausalData]:
    s = sizes()
    return [setup_a(s.n, s.d, s.sigma, np.random.default_rng(seed)) for seed in split_seeds(split)]


def export_test_inputs(folder: Path) -> None:
    """The test data sets' observed (X, w, y), stacked; nothing else of the generator."""
    sets = load_split("test")
    np.savez(folder / TEST_INPUTS.name, **{k: np.stack([getattr(ds, k) for ds in sets]) for k in ("X", "w", "y")})


def test_inputs() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(X, w, y) of every test data set, as the hidden test's prepare step exported them."""
    if not TEST_INPUTS.is_file():
        raise FileNotFoundError(f"{TEST_INPUTS} is missing: the test inputs are only available to the hidden test run")
    with np.load(TEST_INPUTS, allow_pickle=False) as found:
        return list(zip(found["X"], found["w"], found["y"]))


if __name__ == "__main__":  # the hidden test's prepare step: PREPARE_OUT is its only writable folder
    export_test_inputs(Path(os.environ["PREPARE_OUT"]))
