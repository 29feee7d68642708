"""Train a classifier on the training environments and save it to checkpoint.pt.

Full-batch training: every step sees all examples of every training environment,
as in the IRM paper's Colored MNIST experiments.
"""

from __future__ import annotations

import torch

from algorithms import ERM
from data import SEED, SMOKE, THREADS, load_environments
from model import MLP

STEPS = 30 if SMOKE else 300
LR = 0.001
HIDDEN = 128


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return ((logits > 0).float() == y).float().mean().item()


def main() -> None:
    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    envs = load_environments("train")
    model = MLP(HIDDEN)
    algorithm = ERM()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    for step in range(STEPS):
        loss = algorithm.loss(model, envs, step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0 or step == STEPS - 1:
            with torch.no_grad():
                accs = [accuracy(model(x), y) for x, y in envs]
            print(f"step {step:4d}  loss {loss.item():.4f}  train-env acc " + " ".join(f"{a:.3f}" for a in accs), flush=True)
    torch.save(model, "checkpoint.pt")


if __name__ == "__main__":
    main()
