"""One counted experiment step: the engine (`engine.py`) and what it leans on — the
integrity scan, the step's evidence, the hidden test, the run environment and the
submission's history. `from aiscientist.experiment import ExperimentEngine` works; the
names load on first use, so importing a helper module does not load the engine."""

from __future__ import annotations

import importlib
from typing import Any

_ENGINE_NAMES = {"ExperimentEngine", "StepRecord", "TestResult", "best_step", "load_steps"}


def __getattr__(name: str) -> Any:
    if name in _ENGINE_NAMES:
        return getattr(importlib.import_module("aiscientist.experiment.engine"), name)
    raise AttributeError(f"module 'aiscientist.experiment' has no attribute {name!r}")


__all__ = sorted(_ENGINE_NAMES)
