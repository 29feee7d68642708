"""The four classifiers compared in the study."""

from __future__ import annotations

from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler


def build(name: str) -> Pipeline:
    """`knn` / `logreg`, with a `_std` suffix for a StandardScaler fitted on the training fold."""
    base, _, scaled = name.partition("_")
    if base == "knn":
        estimator = KNeighborsClassifier(n_neighbors=5)
    elif base == "logreg":
        estimator = LogisticRegression(C=1.0, max_iter=100)
    else:
        raise ValueError(f"unknown model {name!r}")
    return make_pipeline(StandardScaler(), estimator) if scaled == "std" else make_pipeline(estimator)


MODELS = ("knn", "knn_std", "logreg", "logreg_std")
