"""The one model client every agent uses: budget check, retries, accounting, record/replay."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiscientist.llm.quiet as quiet
from aiscientist.llm.budget import BudgetTracker, tracker_for_run
from aiscientist.llm.config import LLMConfig, load_llm_config
from aiscientist.llm.facts import without_facts
from aiscientist.llm.messages import assistant_message, normalize_tools, request_hash, to_openai_messages
from aiscientist.llm.provider.backends import Backend, backend_kind
from aiscientist.llm.provider.retry import Attempts, send_with_patience
from aiscientist.llm.store import Recorder, Replayer
from aiscientist.llm.tokens import DEFAULT_ENCODING, TokenCounter
from aiscientist.llm.toolcalls import outgoing, reply_calls, stop_sequences
from aiscientist.llm.types import (
    BudgetExhausted,
    Completion,
    ContextOverflow,
    Failure,
    ModelConfigError,
    ModelError,
    Reply,
)
from aiscientist.llm.window import Fitted, context_window, fit, retry_budget, too_large

_slots: dict[tuple[str, str | None], threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


def _slot(config: LLMConfig) -> threading.BoundedSemaphore | None:
    """One semaphore per model and endpoint in the process: at most `max_parallel` requests in flight."""
    if config.max_parallel is None:
        return None
    with _slots_lock:
        return _slots.setdefault((config.model, config.api_base), threading.BoundedSemaphore(config.max_parallel))


class LLMClient:
    def __init__(
        self,
        config: LLMConfig,
        backend: Backend | None,
        budget: BudgetTracker,
        role: str = "agent",
        priced: bool = True,
    ):
        self.config = config
        self.model = config.model
        self.backend = backend
        self.budget = budget
        self.role = role
        self.priced = priced  # offline models cost nothing and use the default tokenizer
        self.counter = TokenCounter(self.model if priced else DEFAULT_ENCODING)
        self.window = context_window(self.model, config.context_window, offline=not priced)
        self.recorder = Recorder(config.record_dir) if config.record_dir else None
        self.replayer = Replayer(config.replay_dir) if config.replay_dir else None

    def complete(
        self, messages: Iterable[Any], tools: Iterable[dict[str, Any]] | None = None, role: str | None = None
    ) -> Completion:
        """One model call. Raises BudgetExhausted before a call that would exceed a
        run limit, ModelUnavailable when the provider kept failing past the patience,
        ContextOverflow when the request does not fit even after trimming, ModelError
        for other failures. The request is fitted to the context window by the rule of
        `aiscientist.llm.window` before it is sent; a provider that still finds it too
        large gets it once more, fitted by the same rule to the limit it stated."""
        role = role or self.role
        msgs, schemas = to_openai_messages(messages), normalize_tools(tools)
        if self.priced and not self.config.send_facts:  # a real model: the FACTS lines are the offline policy's
            msgs = without_facts(msgs)
        fitted = fit(self.counter, msgs, schemas, self.window)
        if self.window is not None and fitted.size > self.window:
            err = too_large(self.model, fitted, self.window)
            self.budget.record(
                {
                    **_stamp(),
                    "role": role,
                    "model": self.model,
                    **_zero(),
                    "outcome": "error",
                    "kind": "context_overflow",
                    "sent": False,
                    "error": str(err),
                }
            )
            raise err
        try:
            return self._call(fitted, schemas, role)
        except ContextOverflow as err:
            smaller = fit(self.counter, fitted.messages, schemas, retry_budget(fitted.size, err))
            smaller.clipped += fitted.clipped
            if smaller.clipped == fitted.clipped:
                raise self._too_large(err, fitted.size, "no tool result to clip") from err
            try:
                return self._call(smaller, schemas, role, retried=True)
            except ContextOverflow as again:
                raise self._too_large(again, smaller.size, "still too large after clipping old tool results") from again

    def _call(self, fitted: Fitted, schemas: list[dict[str, Any]], role: str, retried: bool = False) -> Completion:
        mode, per_reply = self.config.tool_calls, self.config.calls_per_reply
        msgs, sent_tools = outgoing(mode, fitted.messages, schemas, per_reply)
        est_prompt = fitted.size
        key = request_hash(self.model, msgs, sent_tools)
        request = {"model": self.model, "messages": msgs, "tools": sent_tools}
        stop = stop_sequences(mode, schemas, per_reply) if self.config.stop_after_call else None
        if stop:
            request["stop"] = stop
        trim = {"trimmed": True, "clipped": fitted.clipped} if fitted.clipped else {}
        base = {
            "role": role,
            "model": self.model,
            "request_hash": key,
            "tools_offered": bool(schemas),
            "tool_call_mode": mode,
            **trim,
            **({"retried": True} if retried else {}),
        }
        est_completion = self.config.max_tokens or self.budget.typical_completion_tokens()
        try:
            reservation = self.budget.reserve(est_prompt + est_completion, self.price(est_prompt, est_completion))
        except BudgetExhausted as err:
            self.budget.record({**_stamp(), **base, **_zero(), "outcome": "budget_exhausted", "error": str(err)})
            raise
        started, attempts = time.monotonic(), Attempts()
        try:
            reply = self._obtain(key, request, attempts, role)
            prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else est_prompt
            completion_tokens = (
                reply.completion_tokens if reply.completion_tokens is not None else self._count_reply(reply)
            )
            cached, written = reply.cached_tokens or 0, reply.cache_write_tokens or 0
            priced = self.price(prompt_tokens, completion_tokens, cached, written)
            cost = reply.cost if reply.cost is not None else priced
            saved = self.price(prompt_tokens, completion_tokens) - priced if cached + written else 0.0
            if self.recorder is not None:
                update = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cost": cost}
                self.recorder.save(key, request, reply.model_copy(update=update))
        except BaseException as err:
            failure = Failure.of(err) if isinstance(err, ModelError) else None
            if failure is not None and self.recorder is not None:
                self.recorder.save(key, request, Reply(failure=failure))
            kind = {"kind": failure.kind} if failure else {}
            self.budget.record(
                {
                    **_stamp(),
                    **base,
                    **_zero(),
                    **attempts.fields(started),
                    "outcome": "error",
                    **kind,
                    "error": _error_text(err),
                    "replayed": self.replayer is not None,
                },
                reservation,
            )
            raise
        raws, calls = reply_calls(mode, reply.content, reply.tool_calls, schemas, per_reply)
        invalid = [c for c in calls if c.error is not None]
        self.budget.record(
            {
                **_stamp(),
                **base,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cached_tokens": cached,  # the provider's count; 0 when it reported none
                **({"cache_write_tokens": written} if written else {}),
                "cost": cost,  # at the cached price
                "cache_saved": round(saved, 8),  # the uncached price less the cost (negative: writes cost more)
                **attempts.fields(started),
                "outcome": "ok",
                "tokens_estimated": reply.prompt_tokens is None,  # counted here with tiktoken
                "replayed": self.replayer is not None,
                "tool_calls": [c.name for c in calls if c.error is None],
                "invalid_tool_calls": len(invalid),
                **({"tool_call_errors": [c.error for c in invalid]} if invalid else {}),
            },
            reservation,
        )
        return Completion(
            content=reply.content,
            tool_calls=calls,
            message=assistant_message(reply.content, raws),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached_tokens=cached,
            cost=cost,
        )

    def _obtain(self, key: str, request: dict[str, Any], attempts: Attempts, role: str) -> Reply:
        """The reply: from the recording when replaying (a recorded failure is raised
        again), else from the backend with patience."""
        if self.replayer is not None:
            reply = self.replayer.lookup(key, request)
            if reply.failure is not None:
                raise reply.failure.exception()
            return reply
        assert self.backend is not None
        slot = _slot(self.config)
        send = (self.backend, self.config, role, request["messages"], request["tools"], attempts, request.get("stop"))
        if slot is None:
            return send_with_patience(*send)
        with slot:
            return send_with_patience(*send)

    def _too_large(self, err: ContextOverflow, counted: int, why: str) -> ContextOverflow:
        size = err.size or counted
        limit = f"the model's limit is {err.limit} tokens" if err.limit else "the model's limit is not known"
        return ContextOverflow(
            f"{self.model}: the request does not fit the context window: about {size} tokens, {limit} ({why}; "
            f"provider: {err})",
            err.limit,
            size,
        )

    def _count_reply(self, reply: Reply) -> int:
        return self.counter.text(reply.content + "".join(c.name + c.arguments for c in reply.tool_calls))

    def price(self, prompt_tokens: int, completion_tokens: int, cached: int = 0, written: int = 0) -> float:
        """At litellm's prices: `cached` prompt tokens at the cache-read price, `written` at
        the cache-write price (a model litellm does not price: the fallback price for all)."""
        if not self.priced:
            return 0.0
        try:
            prompt_cost, completion_cost = quiet.litellm().cost_per_token(
                model=self.model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cache_read_input_tokens=cached,
                cache_creation_input_tokens=written,
            )
            return float(prompt_cost + completion_cost)
        except Exception:  # not in litellm's cost map: configured fallback price
            cfg = self.config
            return (
                prompt_tokens * cfg.fallback_price_per_1k_prompt
                + completion_tokens * cfg.fallback_price_per_1k_completion
            ) / 1000


def _stamp() -> dict[str, str]:
    return {"ts": datetime.now(UTC).isoformat(timespec="milliseconds")}


def _error_text(err: BaseException) -> str:
    """ModelErrors say what happened in their own words; other errors get their class."""
    return str(err) if isinstance(err, ModelError) else f"{type(err).__name__}: {err}"


def _zero() -> dict[str, Any]:
    return {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost": 0.0,
        "latency_s": 0.0,
        "retry_wait_s": 0.0,
        "attempts": 0,
        "retries": 0,
    }


def make_client(
    model: str, run_dir: Path | None = None, role: str = "agent", config: LLMConfig | None = None
) -> LLMClient:
    """A client for `model` (a litellm name, `offline` or `scripted:PATH`). Problems
    with the model or its credentials raise ModelConfigError here, before any work."""
    if not model or not model.strip():
        raise ModelConfigError("no model name given")
    config = (config or load_llm_config(model)).model_copy(update={"model": model})
    if config.record_dir and config.replay_dir:
        raise ModelConfigError("record_dir and replay_dir are exclusive: a replayed run makes no new calls to record")
    run_key = str(Path(run_dir).resolve()) if run_dir is not None else None
    kind = backend_kind(model)
    # a replayed run answers from the recording: no provider key or server needed
    backend = None if config.replay_dir and not kind.local else kind.factory(config, run_key)
    return LLMClient(config, backend, tracker_for_run(run_dir, config.budget), role=role, priced=not kind.local)
