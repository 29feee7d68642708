"""The frozen feature extractor: three conv blocks and global average pooling (64-d)."""

from __future__ import annotations

import torch
from torch import nn

FEATURE_DIM = 64


def _block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2))


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(_block(1, 16), _block(16, 32), _block(32, FEATURE_DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Features (n, 64) for images (n, 1, 28, 28)."""
        return self.blocks(x).mean(dim=(2, 3))


def load_backbone(path: str = "backbone.pt") -> Backbone:
    """The pre-trained backbone in eval mode with gradients switched off."""
    model = Backbone()
    model.load_state_dict(torch.load(path, weights_only=True))
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
