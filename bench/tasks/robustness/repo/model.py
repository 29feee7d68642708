"""The classifier: a small convolutional network for 28x28 grey images."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self, n_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),   # 24 -> 12
            nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),  # 8 -> 4
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 128), nn.ReLU(),
        )
        self.classifier = nn.Linear(128, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x.view(-1, 1, 28, 28)))
