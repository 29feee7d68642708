"""`aiscientist` and its ablation arms, run through `aiscientist.orchestrator.solve` (which
makes its own workspace). Each run's models file carries its seed, so offline rounds differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aiscientist.agent.outcome import Outcome, StopReason

ARMS = {
    "aiscientist": {},
    "aiscientist-nobus": {"file_bus": False},
    "aiscientist-flat": {"hierarchy": False},
}


class AiScientist:
    name = "aiscientist"
    needs_model = True
    creates_workspace = True

    def solve_run(
        self, task_path: Path, run_dir: Path, model: str, steps: int, seed: int, sandbox: str, options: dict[str, Any]
    ) -> Outcome:
        from aiscientist.config import load_config
        from aiscientist.llm.config import DEFAULT_MODELS_FILE
        from aiscientist.orchestrator import solve

        models_file = run_dir.parent / "models.yaml"
        raw = (yaml.safe_load(DEFAULT_MODELS_FILE.read_text()) if DEFAULT_MODELS_FILE.is_file() else None) or {}
        raw.setdefault("defaults", {})["seed"] = seed
        if model in (raw.get("models") or {}):
            raw["models"][model] = {**(raw["models"][model] or {}), "seed": seed}
        models_file.write_text(yaml.safe_dump(raw))
        sets = [
            f"{key}={str(value).lower() if isinstance(value, bool) else value}"
            for key, value in {**ARMS[self.name], **options}.items()
        ]
        config = load_config(sets=sets, base={"sandbox": sandbox, "models_file": str(models_file)})
        result = solve(task_path, run_dir, config=config, model=model, steps=steps)
        return Outcome(stop=result.stop_reason or StopReason.FINISHED, detail=result.stop_detail)


class AiScientistNoBus(AiScientist):
    name = "aiscientist-nobus"


class AiScientistFlat(AiScientist):
    name = "aiscientist-flat"
