"""Train on the split-MNIST contexts one after the other; save checkpoint.pt."""

from __future__ import annotations

import torch

from data import CONTEXTS, SEED, SMOKE, THREADS, load_contexts
from methods import SynapticIntelligence
from model import MLP

ITERS_PER_CONTEXT = 40 if SMOKE else 500
BATCH_SIZE = 128
LR = 0.001


def main() -> None:
    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    contexts = load_contexts("train")
    model = MLP()
    method = SynapticIntelligence(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.999))
    generator = torch.Generator().manual_seed(SEED)
    for index, (x, y) in enumerate(contexts):
        active_classes = 2 * (index + 1)
        for it in range(ITERS_PER_CONTEXT):
            batch = torch.randint(len(y), (BATCH_SIZE,), generator=generator)
            loss = method.loss(model, x[batch], y[batch], active_classes)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            method.after_step()
        method.end_context()
        print(f"context {index + 1} {CONTEXTS[index]}: final loss {loss.item():.4f}", flush=True)
    torch.save(model, "checkpoint.pt")


if __name__ == "__main__":
    main()
