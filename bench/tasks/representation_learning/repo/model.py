"""Encoder (what the linear probe sees) and projection head (used only in pre-training)."""

from __future__ import annotations

import torch
from torch import nn

FEATURE_DIM = 64


def _block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2))


class Encoder(nn.Module):
    """Three conv blocks and global average pooling: images (n, 1, 28, 28) -> features (n, 64)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(_block(1, 16), _block(16, 32), _block(32, FEATURE_DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x).mean(dim=(2, 3))


class ProjectionHead(nn.Module):
    """Two-layer MLP, as in MoCo v2."""

    def __init__(self, in_dim: int = FEATURE_DIM, hidden: int = 128, out_dim: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.net(h)
