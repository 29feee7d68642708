"""Tier-0 orchestrator: a LangGraph over thin state; `solve` runs (or resumes) a run. Importing
it registers AiScientist's arms as agents (`arms`)."""

from aiscientist.orchestrator import arms  # noqa: F401  (registers the arms: their tools and offline policies)
from aiscientist.orchestrator.run import RunInfo, is_run_folder, solve

__all__ = ["solve", "RunInfo", "is_run_folder"]
