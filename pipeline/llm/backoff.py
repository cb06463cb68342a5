"""From an SDK error to memd's own: retry later (when), fail the item (why), or stop (the key is wrong).

- 408, 409, 429, 5xx (529 overloaded included), timeouts and connection errors -> ``LLMUnavailable``
  with ``not_before`` = now + the wait the API asked for (``retry-after-ms``, ``retry-after``, then the
  rate-limit reset headers), else an exponential wait by attempt; capped by ``max_backoff_s``, jittered
  upward by up to ``JITTER`` so several workers do not come back at the same instant.
- 401, 403 -> ``LLMAuthFailed`` (no item is to blame).
- any other 4xx -> ``LLMRejected`` with the API's own message.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import anthropic

from pipeline.errors import LLMAuthFailed, LLMError, LLMRejected, LLMUnavailable
from pipeline.llm.ratelimit import exhausted_reset, parse_headers, retry_after_s

BASE_BACKOFF_S = 30.0
MIN_BACKOFF_S = 1.0
JITTER = 0.2
RETRYABLE_STATUS = frozenset({408, 409, 429})


def api_message(exc: anthropic.APIStatusError) -> str:
    """The API's own error message (``error.message`` of the body), else the SDK's text."""
    body: Any = exc.body
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            kind = err.get("type")
            return f"{kind}: {err['message']}" if isinstance(kind, str) else str(err["message"])
    return str(exc.message or exc)


def backoff_delay_s(
    headers: Mapping[str, str] | None,
    *,
    now: datetime,
    attempt: int,
    max_backoff_s: float,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before the next try: what the API asked for, else exponential; capped, jittered."""
    asked: float | None = None
    if headers is not None:
        asked = retry_after_s(headers, now)
        if asked is None:
            reset = exhausted_reset(parse_headers(headers, now), now)
            if reset is not None:
                asked = (reset - now).total_seconds()
    base = asked if asked is not None else BASE_BACKOFF_S * 2 ** max(0, attempt - 1)
    jitter = (rng or random).uniform(0.0, JITTER)
    return min(max_backoff_s, max(MIN_BACKOFF_S, base * (1.0 + jitter)))


def translate(
    exc: anthropic.APIError,
    *,
    now: datetime,
    attempt: int = 1,
    max_backoff_s: float,
    rng: random.Random | None = None,
) -> LLMError:
    """memd's error for an SDK error (see the module docstring)."""
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        headers = dict(exc.response.headers.items())
        message = api_message(exc)
        if status in (401, 403):
            return LLMAuthFailed(f"the API refused the credentials ({status}): {message}", status=status)
        if status in RETRYABLE_STATUS or status >= 500:
            delay = backoff_delay_s(headers, now=now, attempt=attempt, max_backoff_s=max_backoff_s, rng=rng)
            return LLMUnavailable(
                f"API unavailable ({status}): {message}",
                not_before=now + timedelta(seconds=delay),
                status=status,
            )
        return LLMRejected(f"API rejected the request ({status}): {message}", status=status)
    # Timeouts, connection failures, and responses the SDK could not read: try again later.
    delay = backoff_delay_s(None, now=now, attempt=attempt, max_backoff_s=max_backoff_s, rng=rng)
    kind = "timed out" if isinstance(exc, anthropic.APITimeoutError) else "unreachable"
    return LLMUnavailable(f"API {kind}: {type(exc).__name__}", not_before=now + timedelta(seconds=delay))
