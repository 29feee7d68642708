"""The agent kernel every agent runs on: tools defined once (`tools`), the shell tool
(`shell`), one table of tool sets (`toolsets`), one tool-calling loop (`loop`) and a
typed outcome whose stop reason is an enum (`outcome`)."""

from aiscientist.agent.outcome import Outcome, StopReason, StopRun

__all__ = ["Outcome", "StopReason", "StopRun"]
