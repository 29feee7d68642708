"""What a model call returns, and the errors callers handle."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from aiscientist.records.stop import StopReason


class ModelError(Exception):
    """A model call failed for good; the caller turns it into a failed step. `cause` is the
    failure in words without the model's name ('connection refused (...)', 'API key refused: ...')."""

    def __init__(self, message: str, cause: str | None = None):
        super().__init__(message)
        self.cause = cause or message


class ModelUnavailable(ModelError):
    """Retryable failures lasted past the call's patience: the run stops resumably."""


class ContextOverflow(ModelError):
    """The request does not fit the context window (`limit`, `size`: tokens, when known)."""

    def __init__(self, message: str, limit: int | None = None, size: int | None = None):
        super().__init__(message)
        self.limit, self.size = limit, size


class BudgetExhausted(Exception):
    """The next call would exceed a run budget. Agents wrap up when they see it."""

    def __init__(self, limit: str, used: float, requested: float, maximum: float):
        self.limit, self.used, self.requested, self.maximum = limit, used, requested, maximum
        super().__init__(
            f"{limit} budget exhausted: {used:g} used, this call needs about {requested:g} more, limit {maximum:g}"
        )

    @property
    def stop(self) -> StopReason:
        """How the run ends: a spent wall-time budget is the run's time, not the model's budget."""
        return StopReason.WALL_TIME if self.limit == "wall_time_s" else StopReason.MODEL_BUDGET

    @property
    def stop_detail(self) -> str:
        return "wall-time budget used" if self.limit == "wall_time_s" else f"model budget exhausted ({self.limit})"


class ModelConfigError(ValueError):
    """The model cannot be used as configured (unknown name, missing key, bad script file)."""


def describe_validation(err: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(value)'}: {e['msg']}" for e in err.errors())


class ReplayMiss(RuntimeError):
    """A replayed run asked for a request that was never recorded. Deliberately not a
    ModelError: a replay that diverges must stop loudly, not become a failed step."""


class ScriptExhausted(RuntimeError):
    """A `scripted:` model was asked for more responses than its script holds."""


class ToolArgumentError(ValueError):
    """A tool call's arguments are not valid JSON or do not match the tool's schema."""


class RawToolCall(BaseModel):
    id: str
    name: str
    arguments: str


class Failure(BaseModel):
    """A failed call as record/replay stores it: replayed, it raises the same error again."""

    kind: Literal["unavailable", "context_overflow", "error"]
    message: str
    limit: int | None = None
    size: int | None = None

    @classmethod
    def of(cls, err: ModelError) -> Failure:
        if isinstance(err, ContextOverflow):
            return cls(kind="context_overflow", message=str(err), limit=err.limit, size=err.size)
        return cls(kind="unavailable" if isinstance(err, ModelUnavailable) else "error", message=str(err))

    def exception(self) -> ModelError:
        if self.kind == "context_overflow":
            return ContextOverflow(self.message, self.limit, self.size)
        return ModelUnavailable(self.message) if self.kind == "unavailable" else ModelError(self.message)


class Reply(BaseModel):
    """One raw model answer; usage is None when the provider did not report it."""

    content: str = ""
    tool_calls: list[RawToolCall] = Field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None  # of prompt_tokens, read from the provider's prompt cache
    cache_write_tokens: int | None = None  # of prompt_tokens, written to it (Anthropic)
    cost: float | None = None
    failure: Failure | None = None


class ToolCall(BaseModel):
    """`error` is set when the arguments were unusable (see `tool_error_message`)."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class Completion(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    message: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0

    @property
    def invalid_tool_calls(self) -> list[ToolCall]:
        return [c for c in self.tool_calls if c.error is not None]
