"""Patience with a failing provider: exponential backoff with jitter, Retry-After
honoured, for up to `patience_s` of continuous failure per call.

Each retry is announced (`aiscientist.util.notices`, e.g. the console's status line
"model unavailable, retry 4 in 32 s") and kept in the call's record (`retry_log`).
Past the patience the call raises ModelUnavailable; the run stops resumably.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from aiscientist.llm.config import LLMConfig
from aiscientist.llm.provider.backends import Backend
from aiscientist.llm.provider.errors import Transient
from aiscientist.llm.types import ModelUnavailable, Reply
from aiscientist.util import notices


@dataclass
class Attempts:
    count: int = 0
    waited_s: float = 0.0
    log: list[dict[str, Any]] = field(default_factory=list)

    def fields(self, started: float) -> dict[str, Any]:
        """The call record's timing fields (`started`: time.monotonic())."""
        return {
            "latency_s": round(time.monotonic() - started, 3),
            "retry_wait_s": round(self.waited_s, 3),
            "attempts": self.count,
            "retries": max(0, self.count - 1),
            "retry_log": self.log,
        }


def send_with_patience(
    backend: Backend,
    cfg: LLMConfig,
    role: str,
    msgs: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    attempts: Attempts,
    stop: list[str] | None = None,
) -> Reply:
    """One answer, retrying transient failures until the patience (or `max_attempts`,
    when set) runs out."""
    first_failure: float | None = None  # when the first failing attempt began
    while True:
        attempts.count += 1
        began = time.monotonic()
        try:
            return backend.send(msgs, tools, stop)
        except Transient as err:
            first_failure = began if first_failure is None else first_failure
            failing_s = time.monotonic() - first_failure
            left = cfg.patience_s - failing_s
            if (cfg.max_attempts is not None and attempts.count >= cfg.max_attempts) or left <= 0:
                raise ModelUnavailable(
                    f"{cfg.model}: {err} (model unavailable: gave up after {attempts.count} attempts over "
                    f"{failing_s:.0f} s of failure; patience_s={cfg.patience_s:g})",
                    cause=str(err),
                ) from err
            delay = min(cfg.backoff_max_s, cfg.backoff_base_s * 2 ** (attempts.count - 1)) * random.uniform(0.5, 1.0)
            if err.retry_after is not None:
                if err.retry_after > left:
                    raise ModelUnavailable(
                        f"{cfg.model}: {err} (model unavailable: the server asked to retry after {err.retry_after:g} "
                        f"s, past the remaining patience of {left:.0f} s)",
                        cause=str(err),
                    ) from err
                delay = max(delay, err.retry_after)
            delay = min(delay, left)  # the last attempt comes when the patience ends
            attempts.log.append(
                {"attempt": attempts.count, "status": err.status, "error": str(err), "wait_s": round(delay, 3)}
            )
            notices.notify("model", f"model unavailable, retry {attempts.count} in {delay:.0f} s ({role}: {err})")
            time.sleep(delay)
            attempts.waited_s += delay
