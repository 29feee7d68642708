"""DP-InstaHide (Borgnia et al., 2021) as a training-time augmentation:
k-way mixup of the batch followed by additive Laplacian noise, in the spirit
of ART's DPInstaHideTrainer (Mixup with 2 images, Laplace noise, scale 0.1)."""

from __future__ import annotations

import torch


class DPInstaHide:
    def __init__(self, n_classes: int = 10, num_mix: int = 2, alpha: float = 1.0, noise_scale: float = 0.1):
        self.n_classes, self.num_mix, self.alpha, self.noise_scale = n_classes, num_mix, alpha, noise_scale

    def __call__(self, x: torch.Tensor, y: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Mixed, noised inputs and soft labels for one batch."""
        n = len(x)
        weights = torch.distributions.Dirichlet(torch.full((self.num_mix,), self.alpha)).sample((n,))
        onehot = torch.nn.functional.one_hot(y, self.n_classes).float()
        x_mix, y_mix = torch.zeros_like(x), torch.zeros_like(onehot)
        for k in range(self.num_mix):
            perm = torch.arange(n) if k == 0 else torch.randperm(n, generator=generator)
            x_mix += weights[:, k : k + 1] * x[perm]
            y_mix += weights[:, k : k + 1] * onehot[perm]
        noise = torch.distributions.Laplace(0.0, self.noise_scale).sample(x_mix.shape)
        return (x_mix + noise).clamp(0.0, 1.0), y_mix
