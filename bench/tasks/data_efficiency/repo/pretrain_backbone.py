"""Pre-train the backbone on the base classes 0-4 and save backbone.pt.

Run once by the task author; the result is shipped (and protected) so every
experiment uses the same frozen backbone. Deterministic on CPU with the seed below.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from backbone import FEATURE_DIM, Backbone
from data import BASE_CLASSES, THREADS, base_data

EPOCHS, BATCH_SIZE, LR = 2, 128, 0.002


def main() -> None:
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    x, y = base_data()
    backbone, head = Backbone(), nn.Linear(FEATURE_DIM, len(BASE_CLASSES))
    optimizer = torch.optim.Adam([*backbone.parameters(), *head.parameters()], lr=LR)
    for epoch in range(EPOCHS):
        order = torch.randperm(len(y))
        for start in range(0, len(y), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            loss = F.cross_entropy(head(backbone(x[batch])), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}", flush=True)
    torch.save(backbone.state_dict(), "backbone.pt")


if __name__ == "__main__":
    main()
