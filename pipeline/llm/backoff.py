"""From an SDK error to memd's own: retry later (when), fail the item (why), or stop (the key is wrong).

- 408, 409, 429, 5xx (529 overloaded included) and timeouts -> ``LLMUnavailable``
  with ``not_before`` = now + the wait the API asked for (``retry-after-ms``, ``retry-after``, then the
  rate-limit reset headers), else an exponential wait by attempt; capped by ``max_backoff_s``, jittered
  upward by up to ``JITTER`` so several workers do not come back at the same instant.
- connection errors -> ``LLMUnreachable`` (an ``LLMUnavailable``: the items wait, the step fails).
- 401, 403 -> ``LLMAuthFailed`` (no item is to blame).
- 404 on a request for a ``model`` -> ``LLMModelNotFound`` (no item is to blame either).
- any other 4xx -> ``LLMRejected`` with the API's own message.

Every message names the API it was said by (``scheme://host:port``) so a wrong ``base_url`` shows.
The ``openai`` SDK's errors (provider ``openai``) are read the same way: both SDKs shape them alike.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import anthropic

from pipeline.errors import (
    LLMAuthFailed,
    LLMError,
    LLMModelNotFound,
    LLMRejected,
    LLMUnavailable,
    LLMUnreachable,
)
from pipeline.llm.ratelimit import exhausted_reset, parse_headers, retry_after_s

BASE_BACKOFF_S = 30.0
MIN_BACKOFF_S = 1.0
JITTER = 0.2
RETRYABLE_STATUS = frozenset({408, 409, 429})


def _sdks() -> tuple[Any, ...]:
    """The SDK modules whose errors ``translate`` reads: anthropic, and openai once imported."""
    other = sys.modules.get("openai")
    return (anthropic,) if other is None else (anthropic, other)


def _is(exc: BaseException, name: str) -> bool:
    return any(isinstance(exc, getattr(sdk, name)) for sdk in _sdks())


def api_message(exc: Any) -> str:
    """The API's own error message (``error.message`` of the body), else the SDK's text."""
    body: Any = exc.body
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            kind = err.get("type")
            return f"{kind}: {err['message']}" if isinstance(kind, str) else str(err["message"])
    return str(exc.message or exc)


def api_origin(exc: Any) -> str:
    """``scheme://host[:port]`` of the request that failed, or ``the API`` when the SDK kept none."""
    request: Any = getattr(exc, "request", None)
    url: Any = getattr(request, "url", None)
    if url is None or not getattr(url, "host", None):
        return "the API"
    port = f":{url.port}" if getattr(url, "port", None) else ""
    return f"{url.scheme}://{url.host}{port}"


def _cause(exc: BaseException) -> str:
    """The lowest error under ``exc`` worth naming (the SDK's own text is "Connection error.")."""
    seen: BaseException = exc
    while seen.__cause__ is not None and seen.__cause__ is not seen:
        seen = seen.__cause__
    text = str(seen).strip()
    return f"{type(seen).__name__}: {text}" if text else type(seen).__name__


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
    exc: Any,
    *,
    now: datetime,
    attempt: int = 1,
    max_backoff_s: float,
    rng: random.Random | None = None,
    model: str | None = None,
) -> LLMError:
    """memd's error for an SDK error (see the module docstring). ``model``: the model the request
    asked for, when it asked for one (a 404 then means the API does not know it)."""
    origin = api_origin(exc)
    if _is(exc, "APIStatusError"):
        status = exc.status_code
        headers = dict(exc.response.headers.items())
        message = api_message(exc)
        if status in (401, 403):
            return LLMAuthFailed(
                f"the API at {origin} refused the credentials ({status}): {message}", status=status
            )
        if status in RETRYABLE_STATUS or status >= 500:
            delay = backoff_delay_s(headers, now=now, attempt=attempt, max_backoff_s=max_backoff_s, rng=rng)
            return LLMUnavailable(
                f"API unavailable at {origin} ({status}): {message}",
                not_before=now + timedelta(seconds=delay),
                status=status,
            )
        if status == 404 and model:
            return LLMModelNotFound(
                f"the API at {origin} does not know the model {model!r} (404): {message}; set [llm] "
                "extract_model / consolidation_model to one it serves (`memd doctor` lists them)",
                status=status,
            )
        return LLMRejected(f"API rejected the request ({status}): {message}", status=status)
    # Timeouts, connection failures, and responses the SDK could not read: try again later.
    delay = backoff_delay_s(None, now=now, attempt=attempt, max_backoff_s=max_backoff_s, rng=rng)
    not_before = now + timedelta(seconds=delay)
    if _is(exc, "APITimeoutError"):
        return LLMUnavailable(f"API timed out at {origin}: {type(exc).__name__}", not_before=not_before)
    if _is(exc, "APIConnectionError"):
        return LLMUnreachable(f"the API at {origin} is unreachable: {_cause(exc)}", not_before=not_before)
    return LLMUnavailable(f"API at {origin} answered unreadably: {_cause(exc)}", not_before=not_before)
