"""PROTECTED: a synthetic census-like data set in the spirit of UCI Adult
("income > 50K"), with sex as the sensitive attribute.

Generative story (one row per person; s = 1 male, the privileged group):

    s            ~ Bernoulli(0.67)                      (Adult: ~67 % male)
    age          ~ N(38.5, 13) clipped to [17, 90]
    education    ~ round(N(10, 2.5)) clipped to [1, 16]  (years, like education-num)
    married      ~ Bernoulli(sigmoid(-1.2 + 0.08 (age - 25) + 0.6 s))
    relationship  = husband / wife (married, by sex), own-child (age < 25), else not-in-family
                    -> "husband" and "wife" are near-perfect proxies of s
    occupation   ~ Categorical(p(s)): six groups whose mix differs strongly by sex
    hours        ~ N(36 + 6 s, 10) clipped to [1, 99]
    capital_gain  = 0, or Exp(mean 8000) with probability 0.04 + 0.04 * [education > 12]
    income       ~ Bernoulli(sigmoid(z)),
    z = -2.7 + 0.35 (education - 10) + 0.04 (age - 38) - 0.0008 (age - 38)^2
        + 0.03 (hours - 40) + 1.1 married + occupation effect + 1.5e-4 capital_gain
        + 1.0 s                                          (historical bias: a direct effect of sex)

The direct sex term and the sex-dependent occupation mix reproduce Adult's base
rates (here about 34 % positives among men, 14 % among women; Adult: 31 % and
11 %). Features given to the
model: age, education, hours, capital_gain (log1p), sex, one-hot relationship
and occupation. With FML_CPU8_ADULT_CSV=/path/to/adult.data (UCI format, no
header) the real Adult rows are used instead, split 60/15/25 by a fixed seed.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass

import numpy as np

OCCUPATIONS = ["exec_managerial", "prof_specialty", "craft_repair", "adm_clerical", "service", "other"]
OCC_P_MALE = [0.16, 0.13, 0.20, 0.06, 0.10, 0.35]
OCC_P_FEMALE = [0.11, 0.15, 0.02, 0.25, 0.20, 0.27]
OCC_EFFECT = [0.9, 0.8, 0.1, -0.2, -0.8, -0.3]
RELATIONSHIPS = ["husband", "wife", "own_child", "not_in_family"]


@dataclass(frozen=True)
class Table:
    X: np.ndarray         # (n, k) float32 standardised features
    y: np.ndarray         # (n,) int64 label (1 = income > 50K)
    s: np.ndarray         # (n,) int64 sensitive attribute (1 = male, privileged)
    feature_names: list[str]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def synthetic_raw(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    s = rng.binomial(1, 0.67, n)
    age = np.clip(rng.normal(38.5, 13.0, n), 17, 90)
    education = np.clip(np.round(rng.normal(10.0, 2.5, n)), 1, 16)
    married = rng.binomial(1, _sigmoid(-1.2 + 0.08 * (age - 25) + 0.6 * s))
    relationship = np.where(married == 1, np.where(s == 1, 0, 1), np.where(age < 25, 2, 3))
    u = rng.random(n)
    cum_m, cum_f = np.cumsum(OCC_P_MALE), np.cumsum(OCC_P_FEMALE)
    occupation = np.where(s == 1, np.searchsorted(cum_m, u * cum_m[-1]), np.searchsorted(cum_f, u * cum_f[-1]))
    hours = np.clip(rng.normal(36.0 + 6.0 * s, 10.0), 1, 99)
    has_gain = rng.random(n) < 0.04 + 0.04 * (education > 12)
    capital_gain = np.where(has_gain, rng.exponential(8000.0, n), 0.0)
    z = (
        -2.7 + 0.35 * (education - 10) + 0.04 * (age - 38) - 0.0008 * (age - 38) ** 2
        + 0.03 * (hours - 40) + 1.1 * married + np.asarray(OCC_EFFECT)[occupation] + 1.5e-4 * capital_gain
        + 1.0 * s
    )
    income = rng.binomial(1, _sigmoid(z))
    return {"s": s, "age": age, "education": education, "hours": hours, "capital_gain": capital_gain,
            "relationship": relationship, "occupation": occupation, "income": income}


def _features(raw: dict[str, np.ndarray], relationships: list[str], occupations: list[str]) -> Table:
    numeric = [raw["age"], raw["education"], raw["hours"], np.log1p(raw["capital_gain"]), raw["s"].astype(float)]
    names = ["age", "education", "hours", "log_capital_gain", "sex"]
    for column, levels in (("relationship", relationships), ("occupation", occupations)):
        for i, level in enumerate(levels):
            numeric.append((raw[column] == i).astype(float))
            names.append(f"{column}={level}")
    X = np.stack(numeric, axis=1)
    X[:, :4] = (X[:, :4] - FEATURE_CENTRE) / FEATURE_SCALE
    return Table(X=X.astype(np.float32), y=raw["income"].astype(np.int64), s=raw["s"].astype(np.int64), feature_names=names)


# Fixed (not data-dependent) scaling of the numeric columns, so splits agree.
FEATURE_CENTRE = np.array([38.5, 10.0, 40.0, 1.0])
FEATURE_SCALE = np.array([13.0, 2.5, 12.0, 3.0])


def synthetic(n: int, seed: int) -> Table:
    return _features(synthetic_raw(n, np.random.default_rng(seed)), RELATIONSHIPS, OCCUPATIONS)


def adult_csv(path: str) -> Table:
    """All rows of a UCI Adult file (adult.data format: 15 comma-separated
    columns, no header), mapped onto the same feature layout."""
    occ_map = {"Exec-managerial": 0, "Prof-specialty": 1, "Craft-repair": 2, "Adm-clerical": 3, "Other-service": 4}
    rel_map = {"Husband": 0, "Wife": 1, "Own-child": 2}
    if not os.path.isfile(path):
        raise FileNotFoundError(f"FML_CPU8_ADULT_CSV={path}: no such file (expected UCI adult.data)")
    rows = []
    with open(path, newline="") as handle:
        for row in csv.reader(handle):
            row = [c.strip() for c in row]
            if len(row) < 15 or "?" in row:
                continue
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no usable Adult rows (expected 15 comma-separated columns per line)")
    raw = {
        "age": np.array([float(r[0]) for r in rows]),
        "education": np.array([float(r[4]) for r in rows]),
        "relationship": np.array([rel_map.get(r[7], 3) for r in rows]),
        "occupation": np.array([occ_map.get(r[6], 5) for r in rows]),
        "s": np.array([1 if r[9] == "Male" else 0 for r in rows]),
        "capital_gain": np.array([float(r[10]) for r in rows]),
        "hours": np.array([float(r[12]) for r in rows]),
        "income": np.array([1 if r[14].startswith(">50K") else 0 for r in rows]),
    }
    return _features(raw, RELATIONSHIPS, OCCUPATIONS)
