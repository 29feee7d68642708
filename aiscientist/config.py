"""RunConfig: how a research run is set up (`configs/*.yaml` merged with `--set key=value`).

Later sources win: the built-in defaults, then each `--config` file in order, then each
`--set` override. Keys may be dotted (`--set orchestrator.recent_turns=4`); values are
parsed as YAML scalars (`--set file_bus=false` is the boolean False). An unknown key or a
bad value is a ConfigError naming the source, the key and the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aiscientist.sandbox.base import SandboxSettings
from aiscientist.task import TaskError


class ConfigError(TaskError):
    """A config file or `--set` override is unusable (CLI exit code 2)."""


class OrchestratorConfig(BaseModel):
    """How thin the Tier-0 context stays."""

    model_config = ConfigDict(extra="forbid")
    summaries_kept: int = Field(5, ge=1, description="specialist summaries kept in the prompt")
    summary_chars: int = Field(1500, ge=200, description="longest specialist summary the orchestrator sees")
    recent_turns: int = Field(2, ge=1, description="orchestrator decisions (call + results) kept verbatim at least")
    window_growth: int = Field(
        2,
        ge=1,
        description="the turn window grows to this many times recent_turns, then drops back to recent_turns: "
        "until a drop each prompt extends the one before (a prefix cache reuses it; 1: a window sliding by one turn)",
    )
    tool_result_chars: int = Field(1500, ge=200, description="longest tool result kept in a recent turn")
    no_bus_context_chars: int = Field(
        400_000, ge=10_000, description="file_bus off: cap on the conversation that carries full outputs"
    )
    max_decisions_per_step: int = Field(
        6, ge=2, description="decisions allowed per budgeted step before the run is stopped as stuck"
    )
    model_error_limit: int = Field(3, ge=1, description="consecutive failed model calls before the run stops")
    no_tool_call_limit: int = Field(
        3, ge=1, description="decisions in a row that call no tool at all before the run stops (agent_failed)"
    )


class SpecialistConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_turns: int = Field(12, ge=2, description="model calls one specialist call may make")
    experiments_per_call: int = Field(1, ge=1, description="run_experiment calls one experimentation call may make")
    readers: list[Literal["code", "method", "evaluation"]] = Field(
        default_factory=lambda: ["code", "method", "evaluation"],
        description="comprehension's readers, one per axis, when the files do not fit whole in one prompt",
    )
    reader_threshold_chars: int = Field(
        8000,
        ge=0,
        description="files that fit whole within this many characters are read by comprehension itself in one"
        " answer; larger ones are split among the readers (0: always readers)",
    )
    exp_log_tail_chars: int = Field(
        1200, ge=0, description="tail of exp_log.md given to implementation(mode=fix) (about its last entry)"
    )
    build_on_best: bool = Field(
        True,
        description="implementation (modes full, explore) first puts the code back to the best step's (or the"
        " baseline's) when the last experiment set no new best and nothing changed since (specialists/from_best.py)",
    )


class RunConfig(BaseModel):
    """Everything that shapes one `solve` run; recorded in result.json."""

    model_config = ConfigDict(extra="forbid")
    model: str = "offline"
    steps: int | None = Field(None, ge=1, description="experiment steps; default: the task's budget")
    wall_time_s: float | None = Field(None, gt=0, description="default: the task's budget")
    max_tokens: int | None = Field(None, ge=1, description="model token budget for the whole run")
    max_cost_usd: float | None = Field(None, ge=0, description="model cost budget for the whole run")
    file_bus: bool = True
    hierarchy: bool = True
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    seed: int | None = Field(None, description="seed of the offline policy (None: the models file's, default 0)")
    models_file: Path | None = None
    preflight_model_timeout_s: float = Field(
        600, gt=0, description="how long preflight waits for the model's first answer"
    )
    tracking: str | None = Field(None, description="mlflow, mlflow=URI or wandb (docs/tracking.md); --track sets it")
    orchestrator: OrchestratorConfig = Field(default_factory=OrchestratorConfig)
    specialists: SpecialistConfig = Field(default_factory=SpecialistConfig)

    @property
    def arm(self) -> str:
        """The ablation arm, as the bench names its agents."""
        if not self.hierarchy:
            return "aiscientist-flat"
        return "aiscientist" if self.file_bus else "aiscientist-nobus"


def load_config(
    files: list[Path] | None = None, sets: list[str] | None = None, base: dict[str, Any] | None = None
) -> RunConfig:
    """Defaults ← `base` ← each file ← each `key=value` override."""
    merged: dict[str, Any] = dict(base or {})
    for file in files or []:
        merged = _merge(merged, _read_yaml(Path(file)))
    for item in sets or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", item, "expected key=value")
        merged = _merge(merged, _nest(key.strip(), yaml.safe_load(value) if value.strip() else None))
    return validate_config(
        merged, source=", ".join([*(str(f) for f in files or []), *(["--set"] if sets else [])]) or "config"
    )


def validate_config(raw: dict[str, Any], source: str = "config") -> RunConfig:
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(config)"
        reason = "unknown setting" if first["type"] == "extra_forbidden" else first["msg"]
        raise ConfigError(source, key, reason) from None


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(path, "(file)", "no such config file")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(path, "(file)", f"invalid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError(path, "(file)", "expected a mapping of settings")
    validate_config(raw, source=str(path))  # name the file that holds a bad key
    return raw


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    """`a.b`, 1 → {"a": {"b": 1}}."""
    for part in reversed(dotted.split(".")):
        value = {part: value}
    return value


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
