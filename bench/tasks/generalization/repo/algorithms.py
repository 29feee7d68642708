"""Training objectives over a list of environments.

An algorithm turns the per-environment minibatches of one step into the loss to
minimise. ERM pools all environments and minimises the average risk.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ERM:
    """Empirical risk minimisation: mean binary cross-entropy over all environments."""

    def __init__(self, l2_weight: float = 0.001):
        self.l2_weight = l2_weight

    def loss(self, model: nn.Module, envs: list[tuple[torch.Tensor, torch.Tensor]], step: int) -> torch.Tensor:
        risks = torch.stack([F.binary_cross_entropy_with_logits(model(x), y) for x, y in envs])
        l2 = sum(p.pow(2).sum() for name, p in model.named_parameters() if name.endswith("weight"))
        return risks.mean() + self.l2_weight * l2
