"""Why a run stopped, as `result.json` records it: code decides on the enum, never on the text."""

from __future__ import annotations

from enum import Enum


class StopReason(str, Enum):  # noqa: UP042 (StrEnum would change what str() of a member prints)
    SUBMITTED = "submitted"  # the agent declared the run finished
    FINISHED = "finished"  # the agent ended its own work (finish, nothing left to try, external agent exited 0)
    STEP_BUDGET = "step_budget"
    WALL_TIME = "wall_time"
    MODEL_BUDGET = "model_budget"  # tokens, money or calls of the model budget
    DECISION_LIMIT = "decision_limit"  # the orchestrator's decisions ran out before the steps
    TURN_LIMIT = "turn_limit"  # a tool loop ran out of turns without finishing
    MODEL_ERROR = "model_error"  # model calls kept failing (after retries)
    MODEL_UNAVAILABLE = "model_unavailable"  # the provider was unreachable past its patience
    INTERRUPTED = "interrupted"
    AGENT_FAILED = "agent_failed"  # the agent itself failed (no usable answer, external agent exit code)

    @property
    def resumable(self) -> bool:
        """The model failed: `solve --resume` continues once it works again (CLI exit 3)."""
        return self in (StopReason.MODEL_ERROR, StopReason.MODEL_UNAVAILABLE)

    @property
    def normal(self) -> bool:
        """The run ended the way a run should (not counted as an error by the bench): a budget of
        steps or of wall time spent is the end it was given."""
        return self in (StopReason.SUBMITTED, StopReason.FINISHED, StopReason.STEP_BUDGET, StopReason.WALL_TIME)
