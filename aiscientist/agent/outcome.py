"""Why an agent run (or one loop of it) stopped: code decides on the enum, never on the text."""

from __future__ import annotations

from pydantic import BaseModel

from aiscientist.records.stop import StopReason


class Outcome(BaseModel):
    stop: StopReason
    detail: str = ""
    turns: int = 0
    summary: str = ""  # the agent's own closing words (finish/submit argument)

    def __str__(self) -> str:
        return f"{self.stop.value}: {self.detail}" if self.detail else self.stop.value


class StopRun(Exception):
    """Ends the run with `outcome` from inside a tool (the toolbox lets it through)."""

    def __init__(self, stop: StopReason, detail: str = ""):
        super().__init__(detail or stop.value)
        self.outcome = Outcome(stop=stop, detail=detail)
