"""The clock every pipeline step and the daemon are given; tests pass a ``FakeClock``."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol


def parse_time(value: Any) -> datetime | None:
    """A time as memd stores and receives it, as an aware UTC datetime, or None: a datetime
    (PostgreSQL's columns), ISO text with ``Z`` or an offset (API headers, JSON records), or naive
    text, read as UTC (SQLite's ``2026-11-01 12:00:00.000000``). Anything else is None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        try:  # 3.11 reads a trailing Z, and SQLite's "2026-11-01 12:00:00.000000" as is
            moment = datetime.fromisoformat(value if type(value) is str else str(value))
        except ValueError:
            return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never goes backwards."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs an aware datetime")
        self._mono = 1000.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, delta: timedelta | float) -> None:
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        self._now += timedelta(seconds=seconds)
        self._mono += seconds
