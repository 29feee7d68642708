"""The target classifier: a fully connected network on flattened 28x28 images."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, hidden: int = 512, n_classes: int = 10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(784, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
