"""Timestamps as the agents write them (ISO 8601 with ``Z``, epoch milliseconds) to aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

# Epoch values above this are milliseconds (year 2286 in seconds).
_MS_THRESHOLD = 10_000_000_000


def parse_ts(value: Any) -> datetime | None:
    """An aware UTC datetime, or None for anything that is not a timestamp."""
    if isinstance(value, str):
        text = value.strip()
        if not text or not text[0].isdigit():
            return None
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        except ValueError:
            return None
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > _MS_THRESHOLD else float(value)
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
