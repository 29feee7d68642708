"""The tracker-neutral part: the spec, the background worker, what is copied out of a run folder."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from aiscientist.records import accounting
from aiscientist.records.paths import DIFF, RunPaths
from aiscientist.records.result import RunResult
from aiscientist.records.step import StepRecord
from aiscientist.task import TaskError
from aiscientist.util import notices

log = logging.getLogger(__name__)
EXTRAS = {"mlflow": "mlflow", "wandb": "wandb"}
DRAIN_S = 60.0  # at the end of a run, how long its tracker may still send what is queued
PARAM_CHARS = 500  # a param's value is cut to this (MLflow's own limit is larger)
MAX_PARAMS = 200


class TrackingError(TaskError):
    """A `--track` value or `tracking:` setting that cannot be used, or its package is missing."""

    def __init__(self, reason: str):
        super().__init__("--track", "tracking", reason)


@dataclass(frozen=True)
class TrackingSpec:
    kind: Literal["mlflow", "wandb"]
    uri: str | None = None  # MLflow: a tracking URI (default: MLflow's own, ./mlflow.db); W&B: none


def parse_spec(text: str | None) -> TrackingSpec | None:
    """`mlflow`, `mlflow=URI` or `wandb` (None or empty: no tracking); TrackingError otherwise, or when
    the tracker's package is not installed (naming the extra that brings it)."""
    if not text:
        return None
    kind, _, uri = text.partition("=")
    if kind not in EXTRAS or (kind == "wandb" and uri):
        raise TrackingError(f"{text!r}: use mlflow, mlflow=URI or wandb")
    try:
        __import__(EXTRAS[kind])
    except ImportError:
        raise TrackingError(f"{kind} is not installed: pip install 'aiscientist[{kind}]'") from None
    return TrackingSpec(kind, uri or None)  # type: ignore[arg-type]


class TrackerBackend(Protocol):
    """One tracker's calls for one research run (mlflow_backend.py, wandb_backend.py)."""

    def start(self, name: str, params: dict[str, str], tags: dict[str, str]) -> None: ...
    def step(self, step: int, metrics: dict[str, float]) -> None: ...
    def end(self, metrics: dict[str, float], tags: dict[str, str], artifacts: list[Path], status: str) -> None: ...


def flatten(data: Any, prefix: str = "") -> dict[str, str]:
    """Nested params as `a.b.c` keys, values cut to PARAM_CHARS, at most MAX_PARAMS of them."""
    out: dict[str, str] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out |= flatten(value, f"{prefix}{key}.")
    else:
        out[prefix.rstrip(".")] = str(data)[:PARAM_CHARS]
    return dict(list(out.items())[:MAX_PARAMS])


def step_metrics(record: StepRecord, best: float | None) -> dict[str, float]:
    metrics = {
        "success": float(accounting.successful(record)),
        "tokens": float(record.tokens),
        "cost": record.cost,
        "wall_time_s": record.duration_s,
    }
    if record.metric is not None:
        metrics["val_metric"] = record.metric
    if best is not None:
        metrics["best_so_far"] = best
    return metrics


def end_fields(paths: RunPaths) -> tuple[dict[str, float], dict[str, str], list[Path], str]:
    """From result.json: the end metrics, tags, artifacts and the run's status (none yet: KILLED)."""
    if not paths.result.is_file():
        return {}, {"stop_reason": "interrupted"}, [], "KILLED"
    result = RunResult.model_validate_json(paths.result.read_text())
    raw = json.loads(paths.result.read_text())
    metrics = {k: float(v) for k, v in (("best_metric", result.best_metric),) if v is not None}
    if result.test is not None and result.test.metric is not None:
        metrics["test_metric"] = result.test.metric
    tags = {
        "stop_reason": str(result.stop_reason.value if result.stop_reason else ""),
        "score_isolated": str(raw.get("test", {}).get("score_isolated") if raw.get("test") else None),
        "best_step": str(result.best_step),
        "integrity_findings": json.dumps(result.failure_causes, sort_keys=True)[:PARAM_CHARS],
    }
    from aiscientist.viewer import write_page

    artifacts = [paths.result, write_page(paths.root)]
    if result.best_step is not None and (diff := paths.step_dir(result.best_step) / DIFF).is_file():
        artifacts.append(diff)
    return metrics, tags, artifacts, "FINISHED"


class RunTracker:
    """Copies one run folder out to a backend on a background thread; safe to call from the run."""

    def __init__(self, backend: TrackerBackend, paths: RunPaths, direction: accounting.Direction | None):
        self.backend, self.paths, self.direction = backend, paths, direction
        self.logged: set[int] = set()
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._failed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="tracking", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while (call := self._queue.get()) is not None:
            if self._failed:
                continue
            try:
                call()
            except Exception as err:  # any tracker failure: reported once, the run goes on
                self._failed = True
                text = f"tracking stopped for this run ({type(err).__name__}: {str(err)[:300]}); its records are intact"
                log.warning(text)
                notices.notify("failure", text)

    def send(self, call: Callable[[], None]) -> None:
        self._queue.put(call)

    def catch_up(self, *_: Any) -> None:
        """Queue the metrics of every recorded step not sent yet (called as each step is recorded)."""
        with self._lock:
            records = [StepRecord.model_validate_json(p.read_text()) for p in self.paths.step_records()]
            curve = accounting.best_so_far(records, self.direction) if self.direction else [None] * len(records)
            for record, best in zip(records, curve):
                if record.step not in self.logged:
                    self.logged.add(record.step)
                    self.send(lambda r=record, b=best: self.backend.step(r.step, step_metrics(r, b)))

    def close(self) -> None:
        """Send the rest and the end (from result.json), waiting at most DRAIN_S for the backend."""
        self.catch_up()
        self.send(lambda: self.backend.end(*end_fields(self.paths)))
        self._queue.put(None)
        self._thread.join(DRAIN_S)


def _backend(spec: TrackingSpec, parent: str | None, group: str | None) -> TrackerBackend:
    if spec.kind == "mlflow":
        from aiscientist.tracking.mlflow_backend import MlflowBackend

        return MlflowBackend(spec.uri, parent)
    from aiscientist.tracking.wandb_backend import WandbBackend

    return WandbBackend(group)


def start_tracking(
    spec: TrackingSpec | None,
    paths: RunPaths,
    name: str,
    params: dict[str, Any],
    tags: dict[str, str],
    direction: accounting.Direction | None,
    parent: str | None = None,
    group: str | None = None,
) -> RunTracker | None:
    """A tracker for the run in `paths`, its start queued (None without a spec); `close()` it at the end."""
    if spec is None:
        return None
    tracker = RunTracker(_backend(spec, parent, group), paths, direction)
    tracker.send(lambda: tracker.backend.start(name, flatten(params), tags))
    return tracker


@contextmanager
def track_run(spec: TrackingSpec | None, paths: RunPaths, *args: Any, **kwargs: Any) -> Iterator[RunTracker | None]:
    """`start_tracking` for the block; the end (from result.json) is sent on leaving it."""
    tracker = start_tracking(spec, paths, *args, **kwargs)
    try:
        yield tracker
    finally:
        if tracker is not None:
            tracker.close()


def grid_parent(spec: TrackingSpec | None, name: str, params: dict[str, Any]) -> str | None:
    """MLflow: the parent run of a bench grid (its id, for the cells); None for W&B (cells share a group)
    or when it cannot be made (reported once; the cells are then tracked without a parent)."""
    if spec is None or spec.kind != "mlflow":
        return None
    from aiscientist.tracking.mlflow_backend import parent_run

    try:
        return parent_run(spec.uri, name, flatten(params))
    except Exception as err:
        notices.notify("failure", f"tracking: no parent run for the grid ({type(err).__name__}: {str(err)[:300]})")
        return None
