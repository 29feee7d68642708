"""Run the study and write results/metrics.json and results/table.md."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch

from lsc import data, metrics
from lsc.train import predict, train

EPSILONS = (0.0, 0.05, 0.1, 0.2)
SEEDS = (0, 1)
CONFIG = {"n_train": 8000, "hidden": 128, "epochs": 10, "batch_size": 128, "lr": 1e-3}


def main() -> None:
    torch.set_num_threads(1)
    start = time.time()
    x_train, y_train, x_test, y_test = data.load(CONFIG["n_train"], seed=0)
    results: dict[str, dict[str, float]] = {}
    for epsilon in EPSILONS:
        runs = []
        for seed in SEEDS:
            model = train(
                x_train, y_train, epsilon, seed, CONFIG["hidden"], CONFIG["epochs"], CONFIG["batch_size"], CONFIG["lr"]
            )
            probs = predict(model, x_test)
            runs.append(
                {
                    "accuracy": metrics.accuracy(probs, y_test),
                    "nll": metrics.nll(probs, y_test),
                    "ece": metrics.ece(probs, y_test),
                    "confidence": float(probs.max(1).mean()),
                }
            )
            print(f"eps={epsilon} seed={seed} " + " ".join(f"{k}={v:.4f}" for k, v in runs[-1].items()), flush=True)
        results[f"{epsilon:g}"] = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    out = Path("results")
    out.mkdir(exist_ok=True)
    (out / "metrics.json").write_text(
        json.dumps({"config": CONFIG, "seeds": list(SEEDS), "results": results}, indent=2) + "\n"
    )
    rows = ["| epsilon | accuracy | NLL | ECE | mean confidence |", "|---|---|---|---|---|"]
    rows += [
        f"| {e} | {r['accuracy']:.4f} | {r['nll']:.4f} | {r['ece']:.4f} | {r['confidence']:.4f} |"
        for e, r in results.items()
    ]
    (out / "table.md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))
    print(f"done in {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
