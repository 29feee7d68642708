"""Predictor and adversary networks (sizes as in AIF360's AdversarialDebiasing:
one hidden layer of 200 units for the classifier, a linear adversary)."""

from __future__ import annotations

import torch
from torch import nn


class Predictor(nn.Module):
    def __init__(self, n_features: int, hidden: int = 200, dropout: float = 0.2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class Adversary(nn.Module):
    """Predicts the sensitive attribute from the predictor's output and the true
    label (Zhang, Lemoine & Mitchell, 2018, equalised-odds variant)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Parameter(torch.ones(1))
        self.linear = nn.Linear(3, 1)

    def forward(self, logit: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        s = torch.sigmoid((1 + self.c.abs()) * logit)
        return self.linear(torch.stack([s, s * y, s * (1 - y)], dim=1)).squeeze(-1)
