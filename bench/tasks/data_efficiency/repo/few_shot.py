"""Few-shot classifiers on top of the frozen backbone.

The baseline is Prototypical Networks (Snell, Swersky & Zemel, 2017): each class
is represented by the mean embedding (prototype) of its support images, and a
query is scored by its negative squared Euclidean distance to each prototype.
"""

from __future__ import annotations

import torch
from torch import nn


class PrototypicalNetworks(nn.Module):
    def __init__(self, backbone: nn.Module):
        super().__init__()
        self.backbone = backbone
        self.prototypes: torch.Tensor | None = None

    def process_support_set(self, support_images: torch.Tensor, support_labels: torch.Tensor) -> None:
        """Store one prototype per class (labels are 0..n_way-1)."""
        features = self.backbone(support_images)
        n_way = int(support_labels.max()) + 1
        self.prototypes = torch.stack([features[support_labels == c].mean(0) for c in range(n_way)])

    def forward(self, query_images: torch.Tensor) -> torch.Tensor:
        """Scores (n_query, n_way); the highest score is the prediction."""
        assert self.prototypes is not None, "call process_support_set first"
        return -torch.cdist(self.backbone(query_images), self.prototypes).pow(2)


def build_classifier(backbone: nn.Module) -> nn.Module:
    """The classifier evaluate.py uses."""
    return PrototypicalNetworks(backbone)
