"""The one model client every agent uses: budget check, retries, accounting, record/replay."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from aiscientist.llm.backends import Backend, LiteLLMBackend, ScriptedBackend, Transient
from aiscientist.llm.budget import BudgetTracker, tracker_for_run
from aiscientist.llm.config import LLMConfig, load_llm_config
from aiscientist.llm.messages import (
    assistant_message,
    normalize_tools,
    parse_tool_call,
    request_hash,
    to_openai_messages,
)
from aiscientist.llm.store import Recorder, Replayer
from aiscientist.llm.types import BudgetExhausted, Completion, ModelConfigError, ModelError, Reply

OFFLINE_MODEL = "offline"
SCRIPTED_PREFIX = "scripted:"


@dataclass
class _Attempts:
    count: int = 0
    waited_s: float = 0.0


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
        self.recorder = Recorder(config.record_dir) if config.record_dir else None
        self.replayer = Replayer(config.replay_dir) if config.replay_dir else None

    def complete(self, messages: Iterable[Any], tools: Iterable[dict[str, Any]] | None = None, role: str | None = None) -> Completion:
        """One model call. Raises BudgetExhausted before a call that would exceed a
        run limit, ModelError when the call fails for good."""
        role = role or self.role
        msgs, schemas = to_openai_messages(messages), normalize_tools(tools)
        key = request_hash(self.model, msgs, schemas)
        base = {"role": role, "model": self.model, "request_hash": key}
        est_prompt = self._count(messages=msgs, tools=schemas)
        est_completion = self.config.max_tokens or self.budget.typical_completion_tokens()
        try:
            reservation = self.budget.reserve(est_prompt + est_completion, self._price(est_prompt, est_completion))
        except BudgetExhausted as err:
            self.budget.record({**_stamp(), **base, **_zero(), "outcome": "budget_exhausted", "error": str(err)})
            raise
        started, attempts = time.monotonic(), _Attempts()
        try:
            if self.replayer is not None:
                reply = self.replayer.lookup(key, {"model": self.model, "messages": msgs, "tools": schemas})
            else:
                reply = self._send_with_retries(msgs, schemas, attempts)
            prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else est_prompt
            completion_tokens = (
                reply.completion_tokens if reply.completion_tokens is not None else self._count_reply(reply)
            )
            cost = reply.cost if reply.cost is not None else self._price(prompt_tokens, completion_tokens)
            if self.recorder is not None:
                stored = reply.model_copy(
                    update={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cost": cost}
                )
                self.recorder.save(key, {"model": self.model, "messages": msgs, "tools": schemas}, stored)
        except BaseException as err:
            self.budget.record(
                {
                    **_stamp(),
                    **base,
                    **_zero(),
                    "latency_s": round(time.monotonic() - started, 3),
                    "retry_wait_s": round(attempts.waited_s, 3),
                    "attempts": attempts.count,
                    "retries": max(0, attempts.count - 1),
                    "outcome": "error",
                    "error": f"{type(err).__name__}: {err}"[:500],
                },
                reservation,
            )
            raise
        self.budget.record(
            {
                **_stamp(),
                **base,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cost": cost,
                "latency_s": round(time.monotonic() - started, 3),
                "retry_wait_s": round(attempts.waited_s, 3),
                "attempts": attempts.count,
                "retries": max(0, attempts.count - 1),
                "outcome": "ok",
                "tokens_estimated": reply.prompt_tokens is None,  # counted here with tiktoken
                "replayed": self.replayer is not None,
                "tool_calls": [c.name for c in reply.tool_calls],
            },
            reservation,
        )
        return Completion(
            content=reply.content,
            tool_calls=[parse_tool_call(c, schemas) for c in reply.tool_calls],
            message=assistant_message(reply.content, reply.tool_calls),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=cost,
        )

    def _send_with_retries(self, msgs: list[dict[str, Any]], tools: list[dict[str, Any]], attempts: _Attempts) -> Reply:
        cfg = self.config
        assert self.backend is not None
        while True:
            attempts.count += 1
            try:
                return self.backend.send(msgs, tools)
            except Transient as err:
                if attempts.count >= cfg.max_attempts:
                    raise ModelError(f"{self.model}: gave up after {attempts.count} attempts; last error: {err}") from err
                delay = min(cfg.backoff_max_s, cfg.backoff_base_s * 2 ** (attempts.count - 1)) * random.uniform(0.5, 1.0)
                if err.retry_after is not None:
                    if err.retry_after > cfg.retry_after_max_s:
                        raise ModelError(
                            f"{self.model}: server asked to retry after {err.retry_after:g}s, "
                            f"more than retry_after_max_s={cfg.retry_after_max_s:g}"
                        ) from err
                    delay = max(delay, err.retry_after)
                time.sleep(delay)
                attempts.waited_s += delay

    def _count(self, **kwargs: Any) -> int:
        """Tokens by the model's tokenizer where litellm has it offline, else tiktoken's default."""
        import litellm

        if self.priced:
            try:
                return int(litellm.token_counter(model=self.model, **kwargs))
            except Exception:  # e.g. a Hugging Face tokenizer that would need the network
                pass
        return int(litellm.token_counter(model="", **kwargs))

    def _count_reply(self, reply: Reply) -> int:
        text = reply.content + "".join(c.name + c.arguments for c in reply.tool_calls)
        return self._count(text=text) if text else 0

    def _price(self, prompt_tokens: int, completion_tokens: int) -> float:
        if not self.priced:
            return 0.0
        import litellm

        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=self.model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
            )
            return float(prompt_cost + completion_cost)
        except Exception:  # not in litellm's cost map: configured fallback price
            cfg = self.config
            return (
                prompt_tokens * cfg.fallback_price_per_1k_prompt + completion_tokens * cfg.fallback_price_per_1k_completion
            ) / 1000


def _stamp() -> dict[str, str]:
    return {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds")}


def _zero() -> dict[str, Any]:
    return {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "latency_s": 0.0, "retry_wait_s": 0.0, "attempts": 0, "retries": 0}


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
    backend: Backend | None
    priced = True
    if model == OFFLINE_MODEL:
        from aiscientist.llm.offline import OfflineBackend

        backend, priced = OfflineBackend(seed=config.seed, max_steps=config.offline_max_steps), False
    elif model.startswith(SCRIPTED_PREFIX):
        backend, priced = ScriptedBackend(Path(model[len(SCRIPTED_PREFIX):]), run_key), False
    elif config.replay_dir:
        backend = None  # answers come from the recording; no provider key needed
    else:
        backend = LiteLLMBackend(config)
    return LLMClient(config, backend, tracker_for_run(run_dir, config.budget), role=role, priced=priced)
