"""The classifier: an MLP with two hidden layers and one shared 10-way output layer."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, hidden: int = 400, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(28 * 28, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (n, 10) for flattened images (n, 784)."""
        return self.head(self.features(x))
