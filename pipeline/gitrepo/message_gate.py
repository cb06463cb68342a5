"""The secret gate on commit messages: a message (it names a project path, session ids, a run)
passes the same gate as every file before any commit. Each secret found is replaced with
``[REDACTED]``; a finder that cannot say where a secret is makes the commit fail (``MemoryRepoError``),
never pass. Only rule names are logged, never the message."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from pipeline.checks.validate import SecretFinder
from pipeline.errors import MemoryRepoError

log = structlog.get_logger(__name__)

REDACTED = "[REDACTED]"


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


def _span(found: object) -> tuple[int, int] | None:
    start, end = getattr(found, "start", None), getattr(found, "end", None)
    if isinstance(start, int) and isinstance(end, int) and 0 <= start < end:
        return start, end
    return None


def _rule(found: object) -> str:
    rule = getattr(found, "rule", None)
    return rule if isinstance(rule, str) else "secret"


__all__: Sequence[str] = ("REDACTED", "gate_message")
