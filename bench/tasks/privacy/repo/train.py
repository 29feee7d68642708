"""Training of the target model (editable): standard cross-entropy training
with no privacy defence. `fit` returns an object with `predict_proba`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from model import MLP


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 100
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.0


class TargetModel:
    """What the attack and the evaluation see: class probabilities per input."""

    def __init__(self, net: torch.nn.Module):
        self.net = net.eval()

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return F.softmax(self.net(torch.from_numpy(x)).double(), dim=1).numpy()


def fit(x: np.ndarray, y: np.ndarray, seed: int, cfg: TrainConfig = TrainConfig()) -> TargetModel:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    net = MLP()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    net.train()
    for _ in range(cfg.epochs):
        order = torch.randperm(len(xt), generator=generator)
        for start in range(0, len(xt), cfg.batch_size):
            idx = order[start : start + cfg.batch_size]
            loss = F.cross_entropy(net(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return TargetModel(net)
