"""Secret redaction: a hard gate before any request, after every model output, before every commit.

Use: ``redactor = Redactor(load_or_create_key(settings.paths.state_dir))``, then
``redactor.redact(text)`` -> ``RedactionResult(text, counts by rule)`` before a request and on every
model output (the text comes back normalised, ``normalise``: what was checked is what is sent), and ``redactor.scan_clean(text)`` as the commit gate: ``[]`` when clean, else one rule
name per secret found (phase 2 refuses the commit with them; never log the text).
``redactor.report(text)`` adds, for ``memd redact --report``, how many candidates each rule found and
each candidate kept in clear with its rule, span and ``Reason`` (never its value).
"""

from __future__ import annotations

from pipeline.redaction.engine import (
    MAX_GROWTH_PER_REDACTION,
    PLACEHOLDER_MAX_LEN,
    PLACEHOLDER_RE,
    Redactor,
    rule_names,
)
from pipeline.redaction.families import family
from pipeline.redaction.key import KEY_FILE, load_or_create_key
from pipeline.redaction.model import Finding, Kept, RedactionReport, RedactionResult
from pipeline.redaction.reasons import Reason

__all__ = [
    "KEY_FILE",
    "MAX_GROWTH_PER_REDACTION",
    "PLACEHOLDER_MAX_LEN",
    "PLACEHOLDER_RE",
    "Finding",
    "Kept",
    "Reason",
    "family",
    "RedactionReport",
    "RedactionResult",
    "Redactor",
    "load_or_create_key",
    "rule_names",
]
