"""Adversarial debiasing (Zhang, Lemoine & Mitchell, 2018), the method behind
AIF360's AdversarialDebiasing (editable).

Each step the adversary learns to predict the sensitive attribute from the
predictor's output; the predictor follows its own gradient with the component
that would help the adversary projected out, minus `adversary_weight` times the
adversary's gradient."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from model import Adversary, Predictor


@dataclass(frozen=True)
class DebiasConfig:
    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    adversary_weight: float = 0.1
    debias: bool = True


class FairClassifier:
    """What the evaluation needs: `predict(X, s) -> labels in {0, 1}`."""

    def __init__(self, predictor: Predictor):
        self.predictor = predictor.eval()

    def scores(self, X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return torch.sigmoid(self.predictor(torch.from_numpy(X))).numpy()

    def predict(self, X: np.ndarray, s: np.ndarray) -> np.ndarray:
        return (self.scores(X) > 0.5).astype(np.int64)


def _project_out(g: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    unit = direction / (direction.norm() + 1e-8)
    return g - (g * unit).sum() * unit


def fit(X: np.ndarray, y: np.ndarray, s: np.ndarray, seed: int, cfg: DebiasConfig = DebiasConfig()) -> FairClassifier:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    xt = torch.from_numpy(X)
    yt, st = torch.from_numpy(y).float(), torch.from_numpy(s).float()
    predictor, adversary = Predictor(X.shape[1]), Adversary()
    opt_p = torch.optim.Adam(predictor.parameters(), lr=cfg.lr)
    opt_a = torch.optim.Adam(adversary.parameters(), lr=cfg.lr)
    params = list(predictor.parameters())
    predictor.train()
    for _ in range(cfg.epochs):
        order = torch.randperm(len(xt), generator=generator)
        for start in range(0, len(xt), cfg.batch_size):
            idx = order[start : start + cfg.batch_size]
            logit = predictor(xt[idx])
            loss_p = F.binary_cross_entropy_with_logits(logit, yt[idx])
            if not cfg.debias:
                opt_p.zero_grad()
                loss_p.backward()
                opt_p.step()
                continue
            loss_a = F.binary_cross_entropy_with_logits(adversary(logit, yt[idx]), st[idx])
            grads_p = torch.autograd.grad(loss_p, params, retain_graph=True)
            grads_a = torch.autograd.grad(loss_a, params, retain_graph=True)
            for p, gp, ga in zip(params, grads_p, grads_a):
                p.grad = _project_out(gp, ga) - cfg.adversary_weight * ga
            opt_p.step()
            opt_a.zero_grad()
            loss_a_detached = F.binary_cross_entropy_with_logits(adversary(logit.detach(), yt[idx]), st[idx])
            loss_a_detached.backward()
            opt_a.step()
    return FairClassifier(predictor)
