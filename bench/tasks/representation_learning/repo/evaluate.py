"""Protected evaluation: linear-probe accuracy of the frozen encoder in encoder.pt.

A multinomial logistic regression is fitted on the encoder's features of the
small labelled probe set and scored on the validation (`--split val`) or held-out
test (`--split test`) images. Writes final_info.json in FML-bench's format under
the dataset name MNIST (metric `linear_probe_acc`).
"""

from __future__ import annotations

import argparse
import json

import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from data import THREADS, probe_eval, probe_train


def features(encoder: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([encoder(chunk).flatten(1) for chunk in images.split(1000)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--encoder", default="encoder.pt")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    eval_x, eval_y = probe_eval(args.split)
    train_x, train_y = probe_train()
    encoder = torch.load(args.encoder, weights_only=False)
    encoder.eval()
    probe = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    probe.fit(features(encoder, train_x).numpy(), train_y.numpy())
    acc = float(probe.score(features(encoder, eval_x).numpy(), eval_y.numpy()))
    info = {
        "MNIST": {
            "means": {"linear_probe_acc_mean": acc},
            "stderrs": {"linear_probe_acc_stderr": 0.0},
            "final_info_dict": {"linear_probe_acc": [acc]},
        }
    }
    with open("final_info.json", "w") as handle:
        json.dump(info, handle, indent=1)
    print(f"{args.split}: linear-probe accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
