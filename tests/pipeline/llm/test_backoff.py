"""SDK errors become memd's, and their text says which API and what went wrong."""

from __future__ import annotations

from datetime import UTC, datetime

import anthropic
import httpx2 as httpx
import pytest

from pipeline.errors import LLMAuthFailed, LLMModelNotFound, LLMRejected, LLMUnreachable
from pipeline.llm.backoff import translate

NOW = datetime(2026, 1, 1, tzinfo=UTC)
URL = "http://127.0.0.1:9/v1/messages"


def _status_error(status: int, kind: str, message: str) -> anthropic.APIStatusError:
    request = httpx.Request("POST", URL)
    body = {"type": "error", "error": {"type": kind, "message": message}}
    response = httpx.Response(status, json=body, request=request)
    cls = {401: anthropic.AuthenticationError, 404: anthropic.NotFoundError}[status]
    return cls(message, response=response, body=body)


def test_an_unreachable_api_names_the_host_and_the_cause() -> None:
    exc = anthropic.APIConnectionError(request=httpx.Request("POST", URL))
    exc.__cause__ = httpx.ConnectError("[Errno 111] Connection refused")
    err = translate(exc, now=NOW, max_backoff_s=60)
    assert isinstance(err, LLMUnreachable)
    assert "http://127.0.0.1:9" in str(err)
    assert "Connection refused" in str(err)
    assert err.not_before is not None  # the items still wait and come back


def test_a_refused_key_names_the_host() -> None:
    err = translate(
        _status_error(401, "authentication_error", "invalid x-api-key"), now=NOW, max_backoff_s=60
    )
    assert isinstance(err, LLMAuthFailed)
    assert "http://127.0.0.1:9" in str(err)
    assert "invalid x-api-key" in str(err)


@pytest.mark.parametrize("model", ["claude-nope"])
def test_a_model_the_api_does_not_know_is_a_setup_error_naming_it(model: str) -> None:
    exc = _status_error(404, "not_found_error", f"model: {model}")
    err = translate(exc, now=NOW, max_backoff_s=60, model=model)
    assert isinstance(err, LLMModelNotFound)
    assert model in str(err)
    assert "http://127.0.0.1:9" in str(err)
    assert "set [llm] extract_model / consolidation_model" in str(err)  # the setting to change
    # Without a model (a batch the API no longer knows), a 404 stays a plain rejection.
    assert type(translate(exc, now=NOW, max_backoff_s=60)) is LLMRejected
