"""PROTECTED: membership inference attacks on the target model's output
probabilities. Each attack gives a membership score per example (higher =
more likely a member); the reported AUC is the strongest attack's.

- loss: the negative cross-entropy loss of the true label (Yeom et al., 2018),
  the threshold attack behind PrivacyMeter's population attack.
- modified entropy: Song & Mittal (2021), which also uses the wrong classes'
  probabilities and is hard to fool by rescaling confidences.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

EPS = 1e-12


def loss_score(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    p = np.asarray(proba, dtype=np.float64)
    return np.log(np.clip(p[np.arange(len(y)), y], EPS, 1.0))


def modified_entropy_score(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(proba, dtype=np.float64), EPS, 1.0 - EPS)
    rows = np.arange(len(y))
    py = p[rows, y]
    wrong = -(p * np.log(1.0 - p))
    wrong[rows, y] = 0.0
    return (1.0 - py) * np.log(py) - wrong.sum(1)


ATTACKS = {"loss": loss_score, "modified_entropy": modified_entropy_score}


def attack_aucs(proba_in: np.ndarray, y_in: np.ndarray, proba_out: np.ndarray, y_out: np.ndarray) -> dict[str, float]:
    """AUC of every attack at telling members (in) from non-members (out)."""
    labels = np.r_[np.ones(len(y_in)), np.zeros(len(y_out))]
    return {name: float(roc_auc_score(labels, np.r_[score(proba_in, y_in), score(proba_out, y_out)])) for name, score in ATTACKS.items()}
