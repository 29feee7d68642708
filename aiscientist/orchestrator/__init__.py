"""Tier-0 orchestrator: a LangGraph over thin state; `solve` runs (or resumes) a run."""

from aiscientist.orchestrator.run import RunInfo, is_run_folder, solve

__all__ = ["solve", "RunInfo", "is_run_folder"]
