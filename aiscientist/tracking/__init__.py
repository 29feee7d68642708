"""Experiment tracking: a research run shown beside a person's other experiments, in MLflow or
Weights & Biases (`--track mlflow[=URI]`, `--track wandb`, or `tracking:` in the config). The run's
own records stay the truth; a tracker only copies them out: params at the start, each step's metrics
as it is recorded (step index as the tracker's step), at the end the hidden-test metric, the stop
reason and integrity findings as tags, and `result.json`, `run.html` and the best step's diff as
artifacts. Every tracker call runs on one background thread: a tracking server that is down or slow
never stops or slows the run; its first failure is reported once and tracking stops for that run."""

from aiscientist.tracking.base import (
    RunTracker,
    TrackingError,
    TrackingSpec,
    grid_parent,
    parse_spec,
    start_tracking,
    track_run,
)

__all__ = ["RunTracker", "TrackingError", "TrackingSpec", "grid_parent", "parse_spec", "start_tracking", "track_run"]
