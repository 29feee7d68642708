"""Weights & Biases: one W&B run per research run, offline unless WANDB_MODE says otherwise
(syncing, `wandb sync`, is the user's); a bench grid's cells share a group."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

PROJECT = "aiscientist"


class WandbBackend:
    def __init__(self, group: str | None):
        self.group = group
        self.run: Any = None

    def start(self, name: str, params: dict[str, str], tags: dict[str, str]) -> None:
        import wandb

        mode = os.environ.get("WANDB_MODE", "offline")
        settings = wandb.Settings(silent=True, console="off")
        self.run = wandb.init(
            project=PROJECT, name=name, group=self.group, config=params, tags=list(tags.values())[:20],
            mode=mode, settings=settings, reinit="create_new",
        )  # fmt: skip
        self.run.summary.update(tags)

    def step(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def end(self, metrics: dict[str, float], tags: dict[str, str], artifacts: list[Path], status: str) -> None:
        self.run.summary.update({**metrics, **tags, "status": status})
        for path in artifacts:
            self.run.save(str(path), base_path=str(path.parent), policy="now")
        self.run.finish(exit_code=0 if status == "FINISHED" else 1)
