"""Random views of a batch of images for contrastive learning (done on tensors)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def random_resized_crop(x: torch.Tensor, scale: tuple[float, float] = (0.5, 1.0), ratio: tuple[float, float] = (3 / 4, 4 / 3)) -> torch.Tensor:
    """Crop a random box covering `scale` of the area with aspect `ratio` and resize it back."""
    n = x.shape[0]
    area = torch.empty(n).uniform_(*scale)
    log_ratio = torch.empty(n).uniform_(math.log(ratio[0]), math.log(ratio[1]))
    aspect = torch.exp(log_ratio)
    width = torch.sqrt(area * aspect).clamp(max=1.0)
    height = torch.sqrt(area / aspect).clamp(max=1.0)
    cx = (torch.rand(n) * 2 - 1) * (1 - width)
    cy = (torch.rand(n) * 2 - 1) * (1 - height)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 0, 2] = width, cx
    theta[:, 1, 1], theta[:, 1, 2] = height, cy
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, align_corners=False)


def two_views(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Two independently augmented views of the same images."""
    return random_resized_crop(x), random_resized_crop(x)
