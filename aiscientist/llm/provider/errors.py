"""Provider errors in words: the root cause first, never an exception class chain.

litellm wraps a provider's error in several layers ("litellm.BadRequestError:
ContextWindowExceededError: OpenAIException - <the provider's message>"), and reports
a refused connection as an HTTP 500. `describe` digs out what happened and names it
first: connection refused, host unreachable, unknown host, timed out (no answer), API
key refused, unknown model, or the provider's own message with its status.
"""

from __future__ import annotations

import errno
import re
import socket
from collections.abc import Iterator

# how providers state the context limit and the request's size: (pattern, group of the limit, group of the size)
LIMIT_PATTERNS = [
    (
        r"maximum context length is (\d+) tokens.*?(?:resulted in|you requested) (\d+) tokens",
        1,
        2,
    ),  # OpenAI, vLLM, llama.cpp
    (r"(\d+) tokens > (\d+) maximum", 2, 1),  # Anthropic
    (r"requested tokens \((\d+)\) exceed context window of (\d+)", 2, 1),  # llama.cpp's library
    (r"maximum context length is (\d+)", 1, None),
]
UNREACHABLE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EHOSTDOWN}
CONNECT_TIMEOUTS = ("ConnectTimeout",)  # httpx's and httpcore's: no connection was made in time
CONNECT_TIMEOUT_S = 20.0  # a host that takes longer to accept a connection is reported unreachable
STATUS_WORDS = {401: "API key refused", 403: "API key refused", 404: "unknown model (or a wrong api_base path)"}
MESSAGE_LIMIT = 2000  # long enough for any provider's message; the cause comes first anyway
RETRYABLE_STATUS = {408, 409, 425, 429}
HARD_LIMIT_GRACE_S = 1.0  # past the per-read timeout, before an attempt is abandoned


class Transient(Exception):
    """A failure worth retrying (rate limit, 5xx, timeout, dropped connection)."""

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after, self.status = retry_after, status


def chain(err: BaseException) -> Iterator[BaseException]:
    """The error and the errors it was raised from, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def network_failure(err: BaseException, api_base: str | None = None, timeout_s: float | None = None) -> str | None:
    """'connection refused (http://...): nothing listens there' and the like, when the
    request never got an HTTP answer; None otherwise."""
    where = f" ({api_base})" if api_base else ""
    within = f" within {timeout_s:g} s" if timeout_s else ""
    errors = list(chain(err))
    for inner in errors:  # the operating system's words first, wherever they are in the chain
        if isinstance(inner, ConnectionRefusedError):
            return f"connection refused{where}: nothing listens there (start the server or fix api_base)"
        if isinstance(inner, socket.gaierror):
            return f"unknown host{where}: the name does not resolve"
        if isinstance(inner, OSError) and inner.errno in UNREACHABLE:
            return f"host unreachable{where}: {inner.strerror}"
    for inner in errors:
        if type(inner).__name__ in CONNECT_TIMEOUTS:
            connect_s = min(timeout_s or CONNECT_TIMEOUT_S, CONNECT_TIMEOUT_S)
            return f"host unreachable{where}: no connection within {connect_s:g} s"
    for inner in errors:
        if isinstance(inner, ConnectionResetError):
            return f"connection reset by the server{where}"
        if isinstance(inner, TimeoutError):
            return f"timed out{where}: no answer{within}"
    for inner in errors:
        if type(inner).__name__ in ("ConnectError", "RemoteProtocolError", "ReadError"):  # httpx's
            return (_clean(str(inner)) or "connection failed") + where
    return None


def describe(err: BaseException, api_base: str | None = None, timeout_s: float | None = None) -> str:
    """One line, cause first: a network failure (`network_failure`), 'timed out: ...',
    'API key refused: HTTP 401: <provider message>', 'unknown model ...: HTTP 404: ...',
    'HTTP 429: ...', or the provider's message."""
    network = network_failure(err, api_base, timeout_s)
    if network:
        return network
    message = provider_message(err)
    status = getattr(err, "status_code", None)
    if type(err).__name__ == "Timeout":
        return f"timed out: {message}"
    if not isinstance(status, int):
        return message
    named = f"{STATUS_WORDS[status]}: " if status in STATUS_WORDS else ""
    return f"{named}HTTP {status}: {message}"


def provider_message(err: BaseException) -> str:
    """The provider's own error message: from the error body where litellm kept it,
    else the text after litellm's prefixes."""
    for inner in chain(err):
        body = getattr(inner, "body", None)
        if isinstance(body, dict):
            error = body.get("error")
            found = error.get("message") if isinstance(error, dict) else body.get("message")
            if isinstance(found, str) and found.strip():
                return _clean(found)
    return _clean(str(err))


def context_sizes(message: str) -> tuple[int | None, int | None]:
    """(the model's limit, the request's size) in tokens, as far as the message says."""
    for pattern, limit, size in LIMIT_PATTERNS:
        found = re.search(pattern, message, re.I)
        if found:
            return int(found.group(limit)), int(found.group(size)) if size else None
    return None, None


def _clean(text: str) -> str:
    """One line without litellm's class-name prefixes, bounded only far past the cause."""
    text = " ".join(text.split())
    text = re.sub(r"^(?:litellm\.\w+:\s*|\w+Error:\s*|\w+Exception\s*-\s*)+", "", text)
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + "..."
