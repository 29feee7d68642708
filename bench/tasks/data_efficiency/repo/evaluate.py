"""Protected evaluation: mean accuracy over few-shot episodes on the novel classes.

`--split val` draws episodes from MNIST validation images, `--split test` from
held-out test images. The classifier comes from few_shot.build_classifier and
gets the frozen backbone. Writes final_info.json in FML-bench's format under the
dataset name MNIST_novel (metric `accuracy`, with the 95% interval half-width
over episodes as its stderr entry, as few-shot papers report).
"""

from __future__ import annotations

import argparse
import json

import torch

from backbone import load_backbone
from data import N_EPISODES, N_SHOT, N_WAY, SEED, THREADS, episodes
from few_shot import build_classifier


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=["val", "test"], default="val")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    classifier = build_classifier(load_backbone())
    accs = []
    for support_x, support_y, query_x, query_y in episodes(args.split):
        classifier.process_support_set(support_x, support_y)
        scores = classifier(query_x).detach()
        accs.append((scores.argmax(1) == query_y).float().mean().item())
    acc = torch.tensor(accs)
    mean, ci95 = acc.mean().item(), 1.96 * acc.std().item() / len(accs) ** 0.5
    info = {
        "MNIST_novel": {
            "means": {"accuracy_mean": mean},
            "stderrs": {"accuracy_stderr": ci95},
            "final_info_dict": {"accuracy": [mean]},
        }
    }
    with open("final_info.json", "w") as handle:
        json.dump(info, handle, indent=1)
    print(f"{args.split}: {N_WAY}-way {N_SHOT}-shot accuracy {mean:.4f} +- {ci95:.4f} over {N_EPISODES} episodes")


if __name__ == "__main__":
    main()
