"""Self-supervised pre-training with MoCo; saves the encoder to encoder.pt."""

from __future__ import annotations

import torch

from augment import two_views
from data import SEED, SMOKE, THREADS, unlabelled
from model import Encoder, ProjectionHead
from moco import MoCo

STEPS = 20 if SMOKE else 300
BATCH_SIZE = 128
LR = 0.06


def main() -> None:
    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    images = unlabelled()
    head = ProjectionHead()
    moco = MoCo(Encoder(), head, out_dim=head.net[-1].out_features)
    params = [p for p in moco.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=LR, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, STEPS)
    moco.train()
    for step in range(STEPS):
        batch = images[torch.randint(len(images), (BATCH_SIZE,))]
        view_q, view_k = two_views(batch)
        loss = moco.loss(view_q, view_k)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 50 == 0 or step == STEPS - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}", flush=True)
    torch.save(moco.encoder, "encoder.pt")


if __name__ == "__main__":
    main()
