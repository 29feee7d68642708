"""A two-layer MLP trained with (optionally label-smoothed) cross-entropy."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def mlp(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def smoothed_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Cross-entropy against (1 - eps) * one_hot + eps / K."""
    log_probs = torch.log_softmax(logits, dim=1)
    target = torch.full_like(log_probs, epsilon / logits.shape[1])
    target.scatter_(1, labels[:, None], 1.0 - epsilon + epsilon / logits.shape[1])
    return -(target * log_probs).sum(1).mean()


def train(
    x: np.ndarray, y: np.ndarray, epsilon: float, seed: int, hidden: int, epochs: int, batch_size: int, lr: float
) -> nn.Module:
    torch.manual_seed(seed)
    model = mlp(hidden)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    order = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for batch in torch.randperm(len(xs), generator=order).split(batch_size):
            optimiser.zero_grad()
            smoothed_cross_entropy(model(xs[batch]), ys[batch], epsilon).backward()
            optimiser.step()
    return model


@torch.no_grad()
def predict(model: nn.Module, x: np.ndarray) -> np.ndarray:
    return torch.softmax(model(torch.from_numpy(x)), dim=1).numpy()
