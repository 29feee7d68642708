"""PROTECTED: group fairness metrics with AIF360's sign conventions
(unprivileged minus privileged; s = 1 is the privileged group)."""

from __future__ import annotations

import numpy as np


def _rates(y: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    """(false positive rate, true positive rate)."""
    neg, pos = y == 0, y == 1
    fpr = float(pred[neg].mean()) if neg.any() else 0.0
    tpr = float(pred[pos].mean()) if pos.any() else 0.0
    return fpr, tpr


def group_metrics(y: np.ndarray, pred: np.ndarray, s: np.ndarray) -> dict[str, float]:
    fpr_u, tpr_u = _rates(y[s == 0], pred[s == 0])
    fpr_p, tpr_p = _rates(y[s == 1], pred[s == 1])
    aod = 0.5 * ((fpr_u - fpr_p) + (tpr_u - tpr_p))
    return {
        "accuracy": float(np.mean(pred == y)),
        "abs_average_odds_difference": abs(aod),
        "average_odds_difference": aod,
        "equal_opportunity_difference": tpr_u - tpr_p,
        "statistical_parity_difference": float(pred[s == 0].mean() - pred[s == 1].mean()),
    }
