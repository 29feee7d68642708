"""Training loop (editable). `fit` receives the (poisoned) training set only:
which samples are poisoned is unknown to the method."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from defense import DPInstaHide
from model import SmallCNN


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 4
    batch_size: int = 128
    lr: float = 1e-3


class Classifier:
    """What the evaluation needs: `predict(x) -> labels`."""

    def __init__(self, net: torch.nn.Module):
        self.net = net.eval()

    def predict(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = torch.cat([self.net(torch.from_numpy(chunk)) for chunk in np.array_split(x, max(1, len(x) // 1000))])
        return logits.argmax(1).numpy()


def fit(x: np.ndarray, y: np.ndarray, seed: int, cfg: TrainConfig = TrainConfig()) -> Classifier:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    net = SmallCNN()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    defense = DPInstaHide()
    net.train()
    for _ in range(cfg.epochs):
        order = torch.randperm(len(xt), generator=generator)
        for start in range(0, len(xt), cfg.batch_size):
            idx = order[start : start + cfg.batch_size]
            xb, soft = defense(xt[idx], yt[idx], generator)
            loss = -(soft * F.log_softmax(net(xb), dim=1)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return Classifier(net)
