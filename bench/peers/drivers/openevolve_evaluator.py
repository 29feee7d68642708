"""OpenEvolve's evaluation file for a peer run: `evaluate(program_path)` writes the evolved
program into its editable file through the bridge and runs one counted step of our
experiment engine; the returned `combined_score` is our metric, signed so higher is better."""

from __future__ import annotations

import json
import os

from bridge_client import call

FAILED = -1e30  # below every real score: a failed step never becomes OpenEvolve's best


def evaluate(program_path: str) -> dict:
    with open(os.environ["AISCI_BRIEF"]) as handle:
        brief = json.load(handle)
    with open(program_path) as handle:
        code = handle.read()
    written = call("write", path=os.environ["AISCI_OPENEVOLVE_FILE"], text=code)
    if written.get("error"):
        return {"combined_score": FAILED, "error": written["error"]}
    answer = call("experiment", hypothesis=f"openevolve program {os.path.basename(program_path)}")
    metric = answer.get("metric")
    if not answer.get("success") or metric is None:
        return {"combined_score": FAILED, "error": str(answer.get("error") or "no metric")[:500]}
    score = metric if brief["direction"] == "max" else -metric
    return {"combined_score": score, brief["metric"].replace("/", "_"): metric}
