"""Momentum Contrast (He et al., 2020).

A query encoder is trained to pick, for each image, the key of its other
augmented view among a queue of keys from earlier batches (InfoNCE loss). Keys
come from a momentum encoder whose weights trail the query encoder's as an
exponential moving average, which keeps the keys in the queue consistent.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn


class MoCo(nn.Module):
    def __init__(self, encoder: nn.Module, head: nn.Module, out_dim: int, queue_size: int = 4096, momentum: float = 0.99, temperature: float = 0.1):
        super().__init__()
        self.encoder, self.head = encoder, head
        self.key_encoder, self.key_head = copy.deepcopy(encoder), copy.deepcopy(head)
        for p in [*self.key_encoder.parameters(), *self.key_head.parameters()]:
            p.requires_grad_(False)
        self.momentum, self.temperature = momentum, temperature
        self.register_buffer("queue", F.normalize(torch.randn(queue_size, out_dim), dim=1))
        self.pointer = 0

    @torch.no_grad()
    def _update_key_encoder(self) -> None:
        pairs = zip([*self.encoder.parameters(), *self.head.parameters()], [*self.key_encoder.parameters(), *self.key_head.parameters()])
        for q, k in pairs:
            k.mul_(self.momentum).add_(q.detach(), alpha=1 - self.momentum)

    @torch.no_grad()
    def _enqueue(self, keys: torch.Tensor) -> None:
        n = keys.shape[0]
        idx = (self.pointer + torch.arange(n)) % self.queue.shape[0]
        self.queue[idx] = keys
        self.pointer = int((self.pointer + n) % self.queue.shape[0])

    def loss(self, view_q: torch.Tensor, view_k: torch.Tensor) -> torch.Tensor:
        """InfoNCE of queries against their positive key and the queue of negatives."""
        q = F.normalize(self.head(self.encoder(view_q)), dim=1)
        with torch.no_grad():
            self._update_key_encoder()
            k = F.normalize(self.key_head(self.key_encoder(view_k)), dim=1)
        positive = (q * k).sum(1, keepdim=True)
        negative = q @ self.queue.clone().T  # a copy: the queue is updated below, before backward
        logits = torch.cat([positive, negative], dim=1) / self.temperature
        loss = F.cross_entropy(logits, torch.zeros(len(q), dtype=torch.long))
        self._enqueue(k)
        return loss
