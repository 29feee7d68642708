"""Tier-1 specialists, tools of the orchestrator: `SPECIALISTS[name]` = (argument model, run, description)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from aiscientist.agent.context import RunContext
from aiscientist.specialists import comprehension, experimentation, helper, implementation, prioritization
from aiscientist.specialists.base import SpecialistResult

Spec = tuple[type[BaseModel], Callable[[RunContext, str, Any], SpecialistResult], str]

SPECIALISTS: dict[str, Spec] = {
    "comprehension": (
        comprehension.ComprehensionArgs,
        comprehension.run,
        "Understand task, paper and code; writes paper_analysis/ (parallel readers: code, method, evaluation).",
    ),
    "prioritization": (
        prioritization.PrioritizationArgs,
        prioritization.run,
        "Rank diverse hypotheses by expected gain and feasibility; writes plan/prioritized_tasks.md.",
    ),
    "implementation": (
        implementation.ImplementationArgs,
        implementation.run,
        "Change the editable code in submission/ (mode full | fix | explore); logs to impl_log.md.",
    ),
    "experimentation": (
        experimentation.ExperimentationArgs,
        experimentation.run,
        "Run the experiment on the current code (one counted step), compare with baseline and best, log to exp_log.md.",
    ),
    "helper": (helper.HelperArgs, helper.run, "A short auxiliary job; writes only in scratch/."),
}

__all__ = ["SPECIALISTS", "SpecialistResult", "RunContext"]
