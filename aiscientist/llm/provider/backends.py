"""Where replies come from: a litellm provider, or a script file.

A backend's `send` makes one attempt. Retryable failures raise `Transient` (with the
server's Retry-After, if any); anything else raises ModelError. Retries, budgets and
accounting live in the client, the same for every backend.
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import aiscientist.llm.quiet as quiet
from aiscientist.llm.config import LLMConfig
from aiscientist.llm.provider.caching import cache_counts, needs_breakpoints, with_breakpoints
from aiscientist.llm.provider.errors import (
    CONNECT_TIMEOUT_S,
    HARD_LIMIT_GRACE_S,
    RETRYABLE_STATUS,
    Transient,
    context_sizes,
    describe,
    network_failure,
    provider_message,
)
from aiscientist.llm.types import (
    ContextOverflow,
    ModelConfigError,
    ModelError,
    RawToolCall,
    Reply,
    ScriptExhausted,
    describe_validation,
)
from aiscientist.llm.window import context_window
from aiscientist.util.registry import Registry


class Backend(Protocol):
    def send(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: list[str] | None = None
    ) -> Reply: ...


class LiteLLMBackend:
    """Any provider litellm speaks, by litellm model name."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self._litellm = quiet.litellm()
        check_credentials(config.model, config.api_base)

    def send(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: list[str] | None = None) -> Reply:
        """One attempt under a hard wall-clock limit. httpx's timeout bounds each read,
        not the whole answer (a server trickling bytes never trips it), so the attempt
        runs in a worker thread that is abandoned once the limit passes."""
        outcome: dict[str, Any] = {}

        def attempt() -> None:
            try:
                outcome["reply"] = self._attempt(messages, tools, stop)
            except BaseException as err:  # handed to the caller's thread
                outcome["error"] = err

        worker = threading.Thread(target=attempt, name="llm-attempt", daemon=True)
        worker.start()
        worker.join(self.config.timeout_s + HARD_LIMIT_GRACE_S)
        if worker.is_alive():
            limit_s = self.config.timeout_s + HARD_LIMIT_GRACE_S
            raise Transient(f"timed out: no complete answer within the hard limit of {limit_s:g} s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["reply"]

    def _attempt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: list[str] | None) -> Reply:
        litellm, cfg = self._litellm, self.config
        kwargs: dict[str, Any] = {
            "api_base": cfg.api_base,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "stop": stop,
        }
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        if needs_breakpoints(cfg.model):  # the role's stable prefix is cached only up to a breakpoint
            messages, tools = with_breakpoints(messages, tools)
        if tools:
            kwargs["tools"] = tools
        import httpx  # litellm's own HTTP client

        try:
            response = litellm.completion(
                model=cfg.model,
                messages=messages,
                timeout=httpx.Timeout(cfg.timeout_s, connect=min(cfg.timeout_s, CONNECT_TIMEOUT_S)),
                num_retries=0,
                max_retries=0,
                drop_params=True,  # e.g. temperature on models that refuse it
                **kwargs,
            )
        except litellm.ContextWindowExceededError as err:
            raise context_overflow(err, cfg.model) from err
        except Exception as err:  # litellm maps provider errors onto OpenAI-style exceptions
            network = network_failure(err, cfg.api_base, cfg.timeout_s)
            status = None if network else getattr(err, "status_code", None)
            text = network or describe(err, cfg.api_base, cfg.timeout_s)
            if (
                network
                or isinstance(err, litellm.Timeout)
                or (isinstance(status, int) and (status in RETRYABLE_STATUS or status >= 500))
            ):
                raise Transient(text, retry_after(err), status) from err
            raise ModelError(f"{cfg.model}: {text}", cause=text) from err
        try:
            return _reply_from_response(response)
        except (AttributeError, IndexError, TypeError) as err:
            text = f"malformed response ({type(err).__name__}: {err})"
            raise ModelError(f"{cfg.model}: {text}", cause=text) from err


def _reply_from_response(response: Any) -> Reply:
    message = response.choices[0].message
    calls = [
        RawToolCall(id=c.id or f"call_{i}", name=c.function.name or "", arguments=c.function.arguments or "")
        for i, c in enumerate(message.tool_calls or [])
    ]
    usage = getattr(response, "usage", None)
    # litellm reports zeros when the provider sent no usage; no real request has 0 prompt tokens
    reported = usage is not None and bool(getattr(usage, "prompt_tokens", 0))
    cached, written = cache_counts(response) if reported else (None, None)
    return Reply(
        content=message.content or "",
        tool_calls=calls,
        prompt_tokens=usage.prompt_tokens if reported else None,
        completion_tokens=usage.completion_tokens if reported else None,
        cached_tokens=cached,
        cache_write_tokens=written,
    )


def check_credentials(model: str, api_base: str | None) -> None:
    """Fail before any work starts when the provider's key (or base URL) is missing."""
    litellm = quiet.litellm()
    try:
        litellm.get_llm_provider(model)
    except Exception:
        raise ModelConfigError(
            f"unknown model {model!r}: no provider has this name; use a litellm name with a provider prefix "
            "(openai/..., anthropic/..., gemini/..., openrouter/..., ollama/..., hosted_vllm/...), "
            "'offline' or 'scripted:PATH'"
        ) from None
    found = litellm.validate_environment(model=model, api_base=api_base)
    missing = [k for k in found.get("missing_keys", []) if not (api_base and k.endswith(("_API_BASE", "_BASE_URL")))]
    if not found.get("keys_in_environment") and missing:
        raise ModelConfigError(
            f"missing API key: model {model} needs environment variable(s) {', '.join(missing)}, which are not set "
            "(a local OpenAI-compatible server without authentication accepts any value)"
        )


def retry_after(err: Exception) -> float | None:
    """Seconds the server asked us to wait (Retry-After / retry-after-ms), if it did."""
    headers = getattr(err, "litellm_response_headers", None)
    if headers is None and getattr(err, "response", None) is not None:
        headers = getattr(err.response, "headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers[name]) * scale)
        except (KeyError, TypeError, ValueError):
            pass
    try:  # an HTTP date
        return max(0.0, email.utils.parsedate_to_datetime(headers["retry-after"]).timestamp() - time.time())
    except (KeyError, TypeError, ValueError):
        return None


def context_overflow(err: Exception, model: str) -> ContextOverflow:
    """The provider's message with the model's limit and the request's size in tokens,
    the limit from litellm's model map when the message does not say."""
    message = provider_message(err)
    limit, size = context_sizes(message)
    if limit is None:
        limit = context_window(model, None, offline=False)
    return ContextOverflow(f"{model}: context window exceeded: {message}", limit, size)


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | str = Field(
        default_factory=dict, description="a string is sent as-is (may be malformed)"
    )
    id: str | None = None


class ScriptedReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = ""
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ScriptedBackend:
    """`scripted:PATH`: answers with the next entry of a YAML/JSON list. An entry is a
    string (plain text) or `{content, tool_calls: [{name, arguments, id?}], prompt_tokens?,
    completion_tokens?}`. All clients of one run share one position in the script;
    without a run each client has its own."""

    _positions: dict[tuple[str, str], int] = {}
    _lock = threading.Lock()

    def __init__(self, path: Path, run_key: str | None = None):
        self.path = Path(path).resolve()
        self.replies = load_script(self.path)
        self._key = (str(self.path), run_key if run_key is not None else uuid.uuid4().hex)

    def send(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stop: list[str] | None = None) -> Reply:
        with self._lock:
            index = self._positions.get(self._key, 0)
            if index >= len(self.replies):
                raise ScriptExhausted(
                    f"scripted model {self.path}: the script holds {len(self.replies)} responses and call {index + 1} "
                    "asked for another"
                )
            self._positions[self._key] = index + 1
        entry = self.replies[index]
        calls = [
            RawToolCall(
                id=c.id or f"call_s{index}_{i}",
                name=c.name,
                arguments=c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
            )
            for i, c in enumerate(entry.tool_calls)
        ]
        return Reply(**entry.model_dump(exclude={"tool_calls"}), tool_calls=calls, cost=0.0)


def load_script(path: Path) -> list[ScriptedReply]:
    if not path.is_file():
        raise ModelConfigError(f"scripted model: no such script file {path}")
    try:
        raw = yaml.safe_load(path.read_text())  # JSON is YAML too
    except yaml.YAMLError as err:
        raise ModelConfigError(f"{path}: invalid YAML/JSON: {err}") from None
    if not isinstance(raw, list) or not raw:
        raise ModelConfigError(f"{path}: a script is a non-empty list of responses")
    replies = []
    for i, item in enumerate(raw):
        try:
            replies.append(ScriptedReply(content=item) if isinstance(item, str) else ScriptedReply.model_validate(item))
        except ValidationError as err:
            raise ModelConfigError(f"{path}: response {i}: {describe_validation(err)}") from None
    return replies


BackendFactory = Callable[[LLMConfig, "str | None"], Backend]


@dataclass(frozen=True)
class BackendKind:
    """How to make the backend of a model name; `local` kinds (offline, scripted) need
    no endpoint, cost nothing and count tokens with the default encoding."""

    factory: BackendFactory
    local: bool = False


_KINDS: Registry[BackendKind] = Registry("model backend", ModelConfigError)
SCRIPTED_PREFIX = "scripted:"
LITELLM = ""  # the kind of every name no other kind claims


def register_backend(name: str, factory: BackendFactory, local: bool = False) -> None:
    """`name` is a model name, or a prefix when it ends with ':' or '/'."""
    _KINDS.register(name, BackendKind(factory, local))


def backend_kind(model: str) -> BackendKind:
    """The exact name's kind, else the longest registered prefix's, else litellm's."""
    prefixes = [p for p in _KINDS if p and p[-1] in ":/" and model.startswith(p)]
    return _KINDS.get(model if model in _KINDS else max(prefixes, key=len) if prefixes else LITELLM)


def _offline(config: LLMConfig, run_key: str | None) -> Backend:
    from aiscientist.llm.offline import OfflineBackend

    return OfflineBackend(seed=config.seed, max_steps=config.offline_max_steps)


def _local(config: LLMConfig, run_key: str | None) -> Backend:
    """`local/NAME`: llama.cpp's server at the entry's api_base, started here if nothing answers;
    its answers streamed (`stream.py`: a request given up stops the server's generation)."""
    from aiscientist.llm.local.server import ensure_server
    from aiscientist.llm.provider.stream import StreamBackend

    if not config.api_base or not config.gguf:
        raise ModelConfigError(f"{config.model}: a local model needs api_base and gguf in its models-file entry")
    alias = config.model.removeprefix("local/")
    ensure_server(config.api_base, config.gguf, alias, config.context_window or 8192)
    return StreamBackend(config, alias)


register_backend(LITELLM, lambda config, run_key: LiteLLMBackend(config))
register_backend("offline", _offline, local=True)
register_backend(
    SCRIPTED_PREFIX,
    lambda config, run_key: ScriptedBackend(Path(config.model.removeprefix(SCRIPTED_PREFIX)), run_key),
    local=True,
)
register_backend("local/", _local)
