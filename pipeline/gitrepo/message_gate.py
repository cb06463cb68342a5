"""The secret gate on commit messages: a message (it names a project path, session ids, a run)
passes the same gate as every file before any commit. Each secret found is replaced with
``[REDACTED]``; a finder that cannot say where a secret is makes the commit fail (``MemoryRepoError``),
never pass. Only rule names are logged, never the message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import structlog

from pipeline.errors import MemoryRepoError

log = structlog.get_logger(__name__)

REDACTED = "[REDACTED]"


class SecretFinder(Protocol):
    """The commit gate: ``find(text)`` returns one item per secret found (rule and position, never the value)."""

    def find(self, text: str) -> Sequence[object]: ...


def gate_message(message: str, finder: SecretFinder) -> str:
    """``message`` with every secret ``finder`` finds replaced by ``[REDACTED]``."""
    found = finder.find(message)
    if not found:
        return message
    spans = [_span(f) for f in found]
    if any(span is None for span in spans):
        raise MemoryRepoError("the commit message holds a secret the gate cannot locate: not committed")
    pieces: list[str] = []
    pos = 0
    for start, end in sorted(s for s in spans if s is not None):
        if end <= pos:
            continue
        pieces.append(message[pos : max(pos, start)])
        pieces.append(REDACTED)
        pos = end
    pieces.append(message[pos:])
    log.warning("commit_message_redacted", rules=sorted({_rule(f) for f in found}))
    return "".join(pieces)


def describe_secret(found: object, text: str) -> str:
    """A secret found in ``text`` as a finding says it: its rule and line, never its value."""
    rule = next(
        (str(v) for a in ("rule", "name", "kind", "detector", "type") if (v := getattr(found, a, None))),
        "secret",
    )
    start = next(
        (v for a in ("start", "offset", "begin") if isinstance(v := getattr(found, a, None), int)), None
    )
    if start is None:
        span = getattr(found, "span", None)
        if isinstance(span, tuple) and span and isinstance(span[0], int):
            start = span[0]
    return rule if start is None else f"{rule} at line {text.count(chr(10), 0, start) + 1}"


def _span(found: object) -> tuple[int, int] | None:
    start, end = getattr(found, "start", None), getattr(found, "end", None)
    if isinstance(start, int) and isinstance(end, int) and 0 <= start < end:
        return start, end
    return None


def _rule(found: object) -> str:
    rule = getattr(found, "rule", None)
    return rule if isinstance(rule, str) else "secret"


__all__: Sequence[str] = ("REDACTED", "SecretFinder", "describe_secret", "gate_message")
