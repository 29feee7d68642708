"""Protected evaluation: per-context accuracy of checkpoint.pt after all contexts.

Every test image is classified among all ten digits (class-incremental), and the
score is the average of the five per-context accuracies. `--split val` uses MNIST
validation images; `--split test` the held-out test images. Writes
final_info.json in FML-bench's format under the dataset name splitMNIST.
"""

from __future__ import annotations

import argparse
import json

import torch

from data import THREADS, load_contexts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    model = torch.load(args.checkpoint, weights_only=False)
    model.eval()
    accs = []
    with torch.no_grad():
        for x, y in load_contexts(args.split):
            accs.append((model(x).argmax(1) == y).float().mean().item())
    average = sum(accs) / len(accs)
    stderr = float(torch.tensor(accs).std().item() / len(accs) ** 0.5)
    info = {
        "splitMNIST": {
            "means": {"average_acc_mean": average},
            "stderrs": {"average_acc_stderr": stderr},
            "final_info_dict": {"average_acc": accs},
        }
    }
    with open("final_info.json", "w") as handle:
        json.dump(info, handle, indent=1)
    print(f"{args.split}: average accuracy {average:.4f}; per context " + " ".join(f"{a:.3f}" for a in accs))


if __name__ == "__main__":
    main()
