"""AiScientist and its ablation arms as agents, each registered once here with the tools, offline
policies and task kinds of its roles (the specialists' policies live in their modules). The bench
runs an arm through `solve` (which makes its own workspace); each run's models file carries its
seed, so offline rounds differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aiscientist.agent.outcome import Outcome, StopReason
from aiscientist.agent.registry import register_agent
from aiscientist.agent.toolsets import READ, SPECIALIST_TOOLS, WRITE
from aiscientist.config import load_config
from aiscientist.llm.config import DEFAULT_MODELS_FILE
from aiscientist.llm.offline.solo import solo
from aiscientist.orchestrator.offline import orchestrator_policy
from aiscientist.orchestrator.run import solve
from aiscientist.specialists import comprehension, experimentation, helper, implementation, prioritization

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
        self,
        task_path: Path,
        run_dir: Path,
        model: str,
        steps: int,
        seed: int,
        sandbox: str,
        options: dict[str, Any],
        wall_time_s: float | None = None,
        elapsed_s: float = 0.0,
    ) -> Outcome:
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
        base = {"sandbox": sandbox, "models_file": str(models_file), "wall_time_s": wall_time_s}
        config = load_config(sets=sets, base=base)
        result = solve(task_path, run_dir, config=config, model=model, steps=steps, elapsed_s=elapsed_s)
        return Outcome(stop=result.stop_reason or StopReason.FINISHED, detail=result.stop_detail)


class AiScientistNoBus(AiScientist):
    name = "aiscientist-nobus"


class AiScientistFlat(AiScientist):
    name = "aiscientist-flat"


HIERARCHY = {
    "orchestrator": (*READ, *SPECIALIST_TOOLS, "submit"),  # the read tools lead every role's list (role_system)
    comprehension.ROLE: (*WRITE, "finish"),
    comprehension.READER_ROLE: (*READ, "finish"),
    prioritization.ROLE: (*READ, "finish"),  # the plan is its answer (run_specialist's deliverable)
    implementation.ROLE: (*WRITE, "bash", "finish"),
    experimentation.ROLE: ("run_experiment", "finish"),  # the result says all it needs; finish: the analysis
    helper.ROLE: (*WRITE, "bash", "finish"),
}
POLICIES = {
    "orchestrator": orchestrator_policy,
    comprehension.ROLE: comprehension.offline_policy,
    comprehension.READER_ROLE: comprehension.reader_policy,
    prioritization.ROLE: prioritization.offline_policy,
    implementation.ROLE: implementation.offline_policy,
    experimentation.ROLE: experimentation.offline_policy,
    helper.ROLE: helper.offline_policy,
}
BOTH = ("improve", "reproduce")
PROSE = {"stop_after_call": False}  # their answer is a document, perhaps with code fences of its own
# five two-line entries fit; the 1.5B model repeated `- change:` lines to its 1,024-token limit (113 s), then to 600
PLAN_TOKENS = 400
SAMPLING = {comprehension.ROLE: PROSE, prioritization.ROLE: {**PROSE, "max_tokens": PLAN_TOKENS}}
register_agent("aiscientist", AiScientist, HIERARCHY, POLICIES, SAMPLING, kinds=BOTH)
register_agent("aiscientist-nobus", AiScientistNoBus, HIERARCHY, POLICIES, SAMPLING, kinds=BOTH)
register_agent(
    "aiscientist-flat",
    AiScientistFlat,
    {"flat": (*WRITE, "append_log", "bash", "run_experiment", "submit")},
    {"flat": solo},
    kinds=BOTH,
)
