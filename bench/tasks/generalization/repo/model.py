"""The classifier: a small MLP on the flattened two-channel 14x14 image, one logit out."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, hidden: int = 128):
        super().__init__()
        layers = [nn.Linear(2 * 14 * 14, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)]
        for layer in layers:
            if isinstance(layer, nn.Linear):
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of shape (n,) for images of shape (n, 2, 14, 14)."""
        return self.net(x.flatten(1)).squeeze(-1)
