"""Hyper-parameters of the DragonNet baseline (editable)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class DragonNetConfig:
    hidden: int = 100           # width of the shared representation (3 layers)
    head_hidden: int = 50       # width of each outcome head (2 layers)
    epochs: int = 60
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-4
    alpha: float = 1.0          # weight of the propensity (treatment) loss
    beta: float = 1.0           # weight of the targeted regularisation term
    targeted_reg: bool = True
