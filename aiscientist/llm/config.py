"""Model settings: `configs/models.yaml` (defaults, then per-model entries) plus overrides."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aiscientist.llm.types import ModelConfigError, describe_validation
from aiscientist.resources import CONFIGS_DIR

DEFAULT_MODELS_FILE = CONFIGS_DIR / "models.yaml"
# set by the CLI's --record / --replay, so every client of the process records or replays
RECORD_ENV, REPLAY_ENV = "AISCIENTIST_LLM_RECORD", "AISCIENTIST_LLM_REPLAY"


class BudgetLimits(BaseModel):
    """Per-run limits on model use (None: unlimited)."""

    model_config = ConfigDict(extra="forbid")
    tokens: int | None = Field(None, ge=0)
    cost_usd: float | None = Field(None, ge=0)
    calls: int | None = Field(None, ge=0)
    wall_time_s: float | None = Field(None, gt=0)


class LLMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = "offline"
    api_base: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = Field(None, ge=1)
    context_window: int | None = Field(
        None, ge=1, description="max input tokens; None: litellm's figure for the model (aiscientist/llm/window.py)"
    )
    timeout_s: float = Field(120.0, gt=0, description="hard limit for one HTTP attempt")
    patience_s: float = Field(
        600.0, gt=0, description="continuous failure one call sits out before the model counts as unavailable"
    )
    max_attempts: int | None = Field(
        None, ge=1, description="a cap on attempts per call besides the patience (None: no cap)"
    )
    backoff_base_s: float = Field(1.0, ge=0, description="first wait; doubled each retry, with jitter")
    backoff_max_s: float = Field(60.0, ge=0)
    fallback_price_per_1k_prompt: float = Field(0.0, ge=0, description="USD, for models litellm has no price for")
    fallback_price_per_1k_completion: float = Field(0.0, ge=0)
    budget: BudgetLimits = Field(default_factory=BudgetLimits)
    record_dir: Path | None = None
    replay_dir: Path | None = None
    tool_calls: Literal["native", "text", "prompt", "auto"] = Field(
        "auto", description="how tool calls travel (aiscientist/llm/toolcalls/modes.py)"
    )
    max_parallel: int | None = Field(None, ge=1, description="requests in flight at once (None: unlimited)")
    calls_per_reply: int | None = Field(
        None,
        ge=1,
        description="text/prompt modes: calls run from one reply, later ones dropped (None: all); with 1 the "
        "generation also stops after the first call",
    )
    stop_after_call: bool = Field(
        True,
        description="with calls_per_reply 1: the server stops after the first fenced call; False for roles whose"
        " answer may be prose with its own code fences (a plain ``` opening a plan was taken for a call's end)",
    )
    send_facts: bool = Field(
        False,
        description="send the prompts' FACTS lines (the offline policy's input, aiscientist/llm/facts.py) to this "
        "model: for a stand-in answering by that policy over HTTP; a real model reads the prose",
    )
    gguf: str | None = Field(None, description="local/ models: a packaged model name or a .gguf path to serve")
    seed: int = 0
    offline_max_steps: int = Field(5, ge=1, description="experiments the offline default policy runs at most")


def load_llm_config(model: str, path: Path | None = None, **overrides: Any) -> LLMConfig:
    """The file's `defaults` ← its `models[model]` entry ← the record/replay environment
    variables ← `overrides`. The file is optional unless `path` names it."""
    file = Path(path) if path is not None else DEFAULT_MODELS_FILE
    raw: dict[str, Any] = {}
    if file.is_file():
        try:
            raw = yaml.safe_load(file.read_text()) or {}
        except yaml.YAMLError as err:
            raise ModelConfigError(f"{file}: invalid YAML: {err}") from None
    elif path is not None:
        raise ModelConfigError(f"{file}: no such model config file")
    if not isinstance(raw, dict):
        raise ModelConfigError(f"{file}: expected a mapping with 'defaults' and 'models'")
    merged: dict[str, Any] = dict(raw.get("defaults") or {})
    entry = (raw.get("models") or {}).get(model) or {}
    for key, value in entry.items():
        if key == "budget" and isinstance(value, dict):
            merged["budget"] = {**merged.get("budget", {}), **value}
        else:
            merged[key] = value
    for key, env in (("record_dir", RECORD_ENV), ("replay_dir", REPLAY_ENV)):
        if os.environ.get(env):
            merged[key] = os.environ[env]
    merged.update({k: v for k, v in overrides.items() if v is not None})
    merged["model"] = model
    try:
        return LLMConfig.model_validate(merged)
    except ValidationError as err:
        raise ModelConfigError(f"{file}: model {model}: {describe_validation(err)}") from None
