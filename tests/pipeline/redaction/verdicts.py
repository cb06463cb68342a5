"""What the structure tests check of a redaction, as written and as a tool result holds it (JSON-escaped
once)."""

from __future__ import annotations

import json

from pipeline.redaction import Redactor


def _wrapped(text: str) -> tuple[str, str]:
    return text, json.dumps({"content": text})[1:-1]


def caught(redactor: Redactor, text: str, *secrets: str) -> str:
    """Every secret redacted in the text as written and JSON-escaped once; the text as redacted."""
    for wrapped in _wrapped(text):
        out = redactor.redact(wrapped).text
        for secret in secrets:
            assert secret not in out, out
        assert "[REDACTED:" in out, out
    return redactor.redact(text).text


def kept(redactor: Redactor, text: str) -> None:
    """The text unchanged, as written and JSON-escaped once."""
    for wrapped in _wrapped(text):
        assert redactor.redact(wrapped).text == wrapped
