"""DragonNet (Shi, Blei & Veitch, 2019): one shared representation Z(x) feeding
two outcome heads Q(0, x), Q(1, x) and a propensity head g(x), plus the scalar
epsilon of the targeted regularisation."""

from __future__ import annotations

import torch
from torch import nn

from config import DragonNetConfig


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ELU()]
    return nn.Sequential(*layers)


class DragonNet(nn.Module):
    def __init__(self, d: int, cfg: DragonNetConfig):
        super().__init__()
        h, k = cfg.hidden, cfg.head_hidden
        self.representation = _mlp([d, h, h, h])
        self.q0 = nn.Sequential(_mlp([h, k, k]), nn.Linear(k, 1))
        self.q1 = nn.Sequential(_mlp([h, k, k]), nn.Linear(k, 1))
        self.propensity = nn.Linear(h, 1)
        self.epsilon = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        z = self.representation(x)
        return {
            "q0": self.q0(z).squeeze(-1),
            "q1": self.q1(z).squeeze(-1),
            "g_logit": self.propensity(z).squeeze(-1),
        }
