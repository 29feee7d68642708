"""Training loop and the ATE estimator the evaluation calls (editable)."""

from __future__ import annotations

import numpy as np
import torch

from config import DragonNetConfig
from dragonnet import DragonNet
from losses import dragonnet_loss


def fit_dragonnet(X: np.ndarray, w: np.ndarray, y: np.ndarray, cfg: DragonNetConfig, seed: int) -> tuple[DragonNet, float, float]:
    """Train on standardised outcomes; returns the model and the (mean, std) used."""
    torch.manual_seed(seed)
    y_mean, y_std = float(y.mean()), float(y.std()) or 1.0
    xt = torch.tensor(X, dtype=torch.float32)
    wt = torch.tensor(w, dtype=torch.float32)
    yt = torch.tensor((y - y_mean) / y_std, dtype=torch.float32)
    model = DragonNet(X.shape[1], cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    generator = torch.Generator().manual_seed(seed)
    n = len(xt)
    model.train()
    for _ in range(cfg.epochs):
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, cfg.batch_size):
            idx = order[start : start + cfg.batch_size]
            out = model(xt[idx])
            loss = dragonnet_loss(out, model.epsilon, wt[idx], yt[idx], cfg)
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return model, y_mean, y_std


def predict(model: DragonNet, X: np.ndarray, y_mean: float, y_std: float) -> dict[str, np.ndarray]:
    with torch.no_grad():
        out = model(torch.tensor(X, dtype=torch.float32))
    return {
        "q0": out["q0"].numpy() * y_std + y_mean,
        "q1": out["q1"].numpy() * y_std + y_mean,
        "g": torch.sigmoid(out["g_logit"]).numpy(),
    }


def estimate_ate(X: np.ndarray, w: np.ndarray, y: np.ndarray, seed: int) -> float:
    """The estimator under evaluation: DragonNet's plug-in ATE, mean(Q1 - Q0)."""
    cfg = DragonNetConfig()
    model, y_mean, y_std = fit_dragonnet(X, w, y, cfg, seed)
    pred = predict(model, X, y_mean, y_std)
    return float(np.mean(pred["q1"] - pred["q0"]))
