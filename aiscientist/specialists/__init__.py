"""Tier-1 specialists, tools of the orchestrator: `SPECIALISTS[name]` = (argument model, run, description)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from aiscientist.agent.context import RunContext
from aiscientist.records.paths import ANALYSIS, PLAN_FILE, SCRATCH, SUBMISSION
from aiscientist.specialists import comprehension, experimentation, helper, implementation, prioritization
from aiscientist.specialists.base import SpecialistResult

Spec = tuple[type[BaseModel], Callable[[RunContext, str, Any], SpecialistResult], str]

SPECIALISTS: dict[str, Spec] = {
    "comprehension": (
        comprehension.ComprehensionArgs,
        comprehension.run,
        f"Understand task, paper and code; writes {ANALYSIS}/ (parallel readers: code, method, evaluation).",
    ),
    "prioritization": (
        prioritization.PrioritizationArgs,
        prioritization.run,
        f"Rank diverse hypotheses by expected gain and feasibility; writes {PLAN_FILE}.",
    ),
    "implementation": (
        implementation.ImplementationArgs,
        implementation.run,
        f"Change the editable code in {SUBMISSION}/ (mode full | fix | explore); logs to impl_log.md.",
    ),
    "experimentation": (
        experimentation.ExperimentationArgs,
        experimentation.run,
        "Measure the current code: one counted step; the engine records the result.",
    ),
    "helper": (helper.HelperArgs, helper.run, f"A short auxiliary job; writes only in {SCRATCH}/."),
}

__all__ = ["SPECIALISTS", "SpecialistResult", "RunContext"]
