"""FML-bench main's four exploration metrics over per-step code embeddings (`bench.scoring.embed`).

A step's code is the full text of the task's target files: the step's snapshot where it holds a
file, the baseline otherwise. Float widths follow FML-bench: spread in float32, the rest in float64.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

import numpy as np

EXPLORATION_COLUMNS = ("Exploration Spread", "Exploration Uniqueness", "Exploration Reach", "Effective dim")
CLUSTER_THRESHOLD = 0.015
EXCLUDED = {"split_config.json", "notes.txt"}  # FML-bench leaves these out of the code text


def exploration(embeddings: np.ndarray, baseline: np.ndarray) -> dict[str, float]:
    """The four metrics of `embeddings` (N × D) against the `baseline` vector."""
    if len(embeddings) == 0:
        return dict.fromkeys(EXPLORATION_COLUMNS, float("nan"))
    vectors32 = np.asarray(embeddings, dtype=np.float32)
    n = len(vectors32)
    centroid = vectors32.mean(axis=0)
    spread = float(
        np.mean([np.linalg.norm(v - centroid) for v in vectors32])
    )  # per-vector norms, as FML-bench (float32 digits)
    nonzero = np.linalg.norm(vectors32, axis=1) > 1e-8
    clusters = _clusters(vectors32[nonzero]) + (1 if (~nonzero).any() else 0)
    vectors64 = vectors32.astype(np.float64)
    reach = float(np.max(np.linalg.norm(vectors64 - np.asarray(baseline, dtype=np.float64), axis=1)))
    effective = 0.0
    if n >= 2:
        singular = np.linalg.svd(vectors64 - vectors64.mean(axis=0), compute_uv=False)
        eigen = singular**2 / (n - 1)
        squares = float(np.sum(eigen**2))
        effective = float(eigen.sum() ** 2 / squares) if squares > 0 else 0.0
    return {
        "Exploration Spread": spread,
        "Exploration Uniqueness": clusters / n,
        "Exploration Reach": reach,
        "Effective dim": effective,
    }


def _clusters(vectors: np.ndarray) -> int:
    if len(vectors) < 2:
        return len(vectors)
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=CLUSTER_THRESHOLD
    )
    return int(model.fit(vectors).n_clusters_)


def target_relative(key: str, repo_subdir: str) -> str | None:
    """A snapshot key (`workspace/<Task>/<repo…>/<file>`) as a path inside the repository."""
    parts = key.split("/")
    if len(parts) < 3:
        return None
    rest = "/".join(parts[2:])
    if repo_subdir and rest.startswith(repo_subdir + "/"):
        rest = rest[len(repo_subdir) + 1 :]
    return None if PurePosixPath(rest).name in EXCLUDED else rest


def full_code(snapshot: Mapping[str, str], baselines: Mapping[str, str], repo_subdir: str) -> str:
    """The step's code text: snapshot files that are targets, then untouched targets' baselines."""
    parts, used = [], set()
    for key in sorted(snapshot):
        rel = target_relative(key, repo_subdir)
        if rel is not None and rel in baselines:
            parts.append(snapshot[key])
            used.add(rel)
    parts += [baselines[rel] for rel in sorted(baselines) if rel not in used]
    return "\n".join(parts)


def embed_all(texts: Sequence[str], prefer: str = "auto") -> tuple[np.ndarray, str]:
    """float32 vectors of `texts` (at least one; an empty text is the zero vector) and the embedder's name."""
    from bench.scoring.embed import get_embedder

    if not texts:
        raise ValueError("nothing to embed")
    embedder = get_embedder(prefer)
    vectors = [embedder.embed(t) if t.strip() else None for t in texts]
    width = next((len(v) for v in vectors if v is not None), 0) or embedder.embed("x").shape[0]
    return np.stack([np.zeros(width) if v is None else v for v in vectors]).astype(np.float32), embedder.name


def explore_steps(
    baselines: Mapping[str, str], snapshots: Sequence[Mapping[str, str]], repo_subdir: str, prefer: str = "auto"
) -> tuple[dict[str, float], str | None]:
    """The four metrics of the steps' code against the baseline code, and the embedder used
    ("unavailable: <why>" and NaN metrics when no code embedder is installed)."""
    if not baselines or not snapshots:
        return dict.fromkeys(EXPLORATION_COLUMNS, math.nan), None
    texts = ["\n".join(text for _, text in sorted(baselines.items()))]
    texts += [full_code(snapshot, baselines, repo_subdir) for snapshot in snapshots]
    from bench.scoring.embed import EmbedderUnavailable

    try:
        vectors, name = embed_all(texts, prefer)
    except EmbedderUnavailable as err:  # a plain install has no code embedder: the metrics are missing, not fatal
        return dict.fromkeys(EXPLORATION_COLUMNS, math.nan), f"unavailable: {err}"
    return exploration(vectors[1:], vectors[0]), name
