"""The agent kernel every agent runs on: tools, the shell tool, the tool-set table, one loop, a typed outcome."""

from aiscientist.agent.outcome import Outcome, StopReason, StopRun

__all__ = ["Outcome", "StopReason", "StopRun"]
