"""The peer side of the bridge (standard library only: it runs under each peer's own
interpreter). Every command and every evaluation a peer asks for goes through `call`."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from typing import Any

BUDGET_SPENT = "AISCI_BUDGET_SPENT"  # a driver's exit status once the step budget is used


def call(op: str, **fields: Any) -> dict[str, Any]:
    """One request to the host; the host's answer (an `error` key when it refused)."""
    request = urllib.request.Request(
        os.environ["AISCI_BRIDGE"],
        data=json.dumps({"op": op, **fields}).encode(),
        headers={"Content-Type": "application/json", "X-Bridge-Token": os.environ["AISCI_BRIDGE_TOKEN"]},
    )
    with urllib.request.urlopen(request, timeout=24 * 3600) as answer:
        return json.loads(answer.read())


def load_brief(path: str) -> dict[str, Any]:
    """The brief, with the model at the loopback address `launch.py` opened for it (the host's
    relay adds the endpoint's key, so the peer's client carries a placeholder)."""
    with open(path) as handle:
        brief = json.load(handle)
    if os.environ.get("AISCI_MODEL_BASE"):
        brief["model"].update(api_base=os.environ["AISCI_MODEL_BASE"], api_key="added-by-the-host")
    return brief


def task_text(brief: dict[str, Any], how_to_evaluate: str) -> str:
    """The task in words every peer gets: goal, metric, editable files, budget, evaluation."""
    baseline = f" (baseline {brief['baseline']})" if brief.get("baseline") is not None else ""
    better = "lower" if brief["direction"] == "min" else "higher"
    return (
        f"{brief['goal'].strip()}\n\n"
        f"Metric: {brief['metric']}, {better} is better{baseline}.\n"
        f"Files you may change: {', '.join(brief['editable'])}. Other files are read-only.\n"
        f"Evaluation budget: {brief['steps']} evaluations. {how_to_evaluate}\n"
    )


def model_kwargs(brief: dict[str, Any]) -> dict[str, Any]:
    """litellm keyword arguments for the run's model."""
    model = brief["model"]
    extra = {k: model.get(k) for k in ("api_base", "api_key", "temperature", "max_tokens")}
    extra["timeout"] = model.get("timeout_s")
    return {k: v for k, v in extra.items() if v is not None}


def stop_when_budget_spent(poll_s: float = 0.5) -> None:
    """For peers that run their own loop past our budget (their iterations are not ours): once
    the host says no step is left, end the peer's whole process group (it leads its own session)."""

    def watch() -> None:
        while call("brief").get("steps_left", 1) > 0:
            time.sleep(poll_s)
        print("step budget spent: ending the peer", flush=True)
        os.killpg(0, signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()
