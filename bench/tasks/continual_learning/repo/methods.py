"""Continual-learning methods. A method shapes the loss of each training step and
may update its own state at the end of each context.

The baseline is Synaptic Intelligence (Zenke, Poole & Ganguli, 2017): while a
context is trained, every parameter accumulates its contribution to the drop in
loss along the optimisation path; at the end of the context this path integral,
divided by the squared total change of the parameter, becomes the parameter's
importance. Later contexts pay a quadratic penalty for moving important
parameters away from the values they had at the end of the previous context.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SynapticIntelligence:
    def __init__(self, model: nn.Module, c: float = 1.0, epsilon: float = 0.1):
        self.c, self.epsilon = c, epsilon
        self.params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self.importance = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.anchor = {n: p.detach().clone() for n, p in self.params.items()}
        self.path_integral = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.before_step: dict[str, torch.Tensor] = {}
        self.context_start = {n: p.detach().clone() for n, p in self.params.items()}

    def loss(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, active_classes: int) -> torch.Tensor:
        """Cross-entropy over the classes seen so far plus the SI penalty."""
        self.before_step = {n: p.detach().clone() for n, p in self.params.items()}
        ce = F.cross_entropy(model(x)[:, :active_classes], y)
        penalty = sum((self.importance[n] * (p - self.anchor[n]).pow(2)).sum() for n, p in self.params.items())
        return ce + self.c * penalty

    def after_step(self) -> None:
        """Accumulate -grad * delta for every parameter (the path integral)."""
        for n, p in self.params.items():
            if p.grad is not None:
                self.path_integral[n] += -p.grad.detach() * (p.detach() - self.before_step[n])

    def end_context(self) -> None:
        """Turn the path integral into importance and move the anchor."""
        for n, p in self.params.items():
            change = p.detach() - self.context_start[n]
            self.importance[n] += self.path_integral[n] / (change.pow(2) + self.epsilon)
            self.path_integral[n].zero_()
            self.anchor[n] = p.detach().clone()
            self.context_start[n] = p.detach().clone()
