"""DragonNet objective: factual outcome loss + alpha * treatment loss
(+ beta * targeted regularisation)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from config import DragonNetConfig

G_CLIP = 0.01  # keeps 1/g finite inside the targeted term


def dragonnet_loss(out: dict[str, torch.Tensor], epsilon: torch.Tensor, w: torch.Tensor, y: torch.Tensor, cfg: DragonNetConfig) -> torch.Tensor:
    q0, q1, g_logit = out["q0"], out["q1"], out["g_logit"]
    q_factual = w * q1 + (1 - w) * q0
    outcome = F.mse_loss(q_factual, y)
    treatment = F.binary_cross_entropy_with_logits(g_logit, w)
    loss = outcome + cfg.alpha * treatment
    if cfg.targeted_reg:
        g = torch.sigmoid(g_logit).clamp(G_CLIP, 1 - G_CLIP)
        h = w / g - (1 - w) / (1 - g)
        y_pert = q_factual + epsilon * h
        loss = loss + cfg.beta * F.mse_loss(y_pert, y)
    return loss
