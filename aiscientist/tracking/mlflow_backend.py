"""MLflow: one MLflow run per research run (a child of the grid's parent run in a bench), through
MLflow's client with explicit run ids (no global active run: bench cells run side by side)."""

from __future__ import annotations

import os
from pathlib import Path

EXPERIMENT = "aiscientist"
# a tracking server that is down must not keep a run's tracker retrying for minutes (users may override)
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def _client(uri: str | None):  # noqa: ANN202 (mlflow is an optional extra)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(EXPERIMENT)
    return client, found.experiment_id if found else client.create_experiment(EXPERIMENT)


def parent_run(uri: str | None, name: str, params: dict[str, str]) -> str:
    """A finished parent run for a bench grid (its cells are children); its id."""
    from mlflow.entities import Param

    client, experiment = _client(uri)
    run = client.create_run(experiment, run_name=name, tags={"aiscientist.kind": "grid"})
    client.log_batch(run.info.run_id, params=[Param(k, v) for k, v in params.items()])
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


class MlflowBackend:
    def __init__(self, uri: str | None, parent: str | None):
        self.uri, self.parent = uri, parent
        self.run_id = ""

    def start(self, name: str, params: dict[str, str], tags: dict[str, str]) -> None:
        from mlflow.entities import Param

        self.client, experiment = _client(self.uri)
        tags = {**tags, **({"mlflow.parentRunId": self.parent} if self.parent else {})}
        self.run_id = self.client.create_run(experiment, run_name=name, tags=tags).info.run_id
        items = [Param(k, v) for k, v in params.items()]
        for start in range(0, len(items), 100):  # MLflow takes 100 params per batch
            self.client.log_batch(self.run_id, params=items[start : start + 100])

    def step(self, step: int, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = _now_ms()
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step) for k, v in metrics.items()])

    def end(self, metrics: dict[str, float], tags: dict[str, str], artifacts: list[Path], status: str) -> None:
        from mlflow.entities import Metric, RunTag

        now = _now_ms()
        self.client.log_batch(
            self.run_id,
            metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        for path in artifacts:
            self.client.log_artifact(self.run_id, str(path))
        self.client.set_terminated(self.run_id, status)


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
