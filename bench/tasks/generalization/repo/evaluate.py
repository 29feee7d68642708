"""Protected evaluation: accuracy of checkpoint.pt on the shifted environment.

`--split val` scores the validation environment (built from MNIST validation
images); `--split test` scores the held-out test environment. Both write
final_info.json in FML-bench's format under the dataset name ColoredMNIST.
"""

from __future__ import annotations

import argparse
import json

import torch

from data import THREADS, load_environments


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=["val", "test"], default="val")
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    shifted = load_environments(args.split)
    model = torch.load(args.checkpoint, weights_only=False)
    model.eval()
    train_accs, shifted_accs = [], []
    with torch.no_grad():
        for envs, accs in ((load_environments("train"), train_accs), (shifted, shifted_accs)):
            for x, y in envs:
                logits = model(x).reshape(len(y), -1)
                pred = logits.argmax(1).float() if logits.shape[1] == 2 else (logits[:, 0] > 0).float()
                accs.append((pred == y).float().mean().item())
    test_env_acc = shifted_accs[0]
    train_acc = sum(train_accs) / len(train_accs)
    info = {
        "ColoredMNIST": {
            "means": {"test_env_acc_mean": test_env_acc, "train_env_acc_mean": train_acc},
            "stderrs": {"test_env_acc_stderr": 0.0, "train_env_acc_stderr": 0.0},
            "final_info_dict": {"test_env_acc": [test_env_acc], "train_env_acc": train_accs},
        }
    }
    with open("final_info.json", "w") as handle:
        json.dump(info, handle, indent=1)
    print(f"{args.split}: shifted-environment accuracy {test_env_acc:.4f}, training-environment accuracy {train_acc:.4f}")


if __name__ == "__main__":
    main()
