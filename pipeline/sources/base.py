"""The one interface every transcript source implements, and what a parse returns.

The scanner calls, per source:

- ``adapter.discover(root) -> Iterator[Path]``: the session files under ``root`` (never raises,
  never loops on symlinks);
- ``adapter.parse(path, start_offset=0, state=None, *, with_items=True, max_bytes=None) ->
  ParseResult``: parse from ``start_offset`` with the ``state`` the previous call returned. Store
  ``result.new_offset`` and ``result.state`` (plain JSON) and pass them back next time, so only
  appended bytes are read. ``start_offset=0`` (or ``state=None``) is a full parse; with
  ``with_items`` it also returns the conversation. ``max_bytes`` is the size the caller saw (the
  scan's ``stat``): no byte past it is read, and later bytes wait for the next parse. The file is
  opened without blocking and must be a regular file on the opened descriptor
  (``pipeline.safefile.open_regular``). A parse never raises: bad input comes back as
  ``result.problem``.

A source whose sessions are not one file each (OpenCode's rows in one SQLite database) is a
``WalkingAdapter``: its ``walk(root)`` lists every session with a path of its own
(``<database>#<session id>``) and a change key shaped like a ``stat`` key, and its offsets are a
session's version (monotone in every write) rather than bytes; see ``pipeline.agents.opencode.database``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import structlog

from pipeline.errors import TranscriptUnreadable
from pipeline.sources.walk import Walked
from pipeline.transcript import Transcript

log = structlog.get_logger(__name__)

# JSON-serializable (dicts, lists, strings, numbers, booleans, None); store it as JSON.
ParserState = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The outcome of one parse call.

    ``transcript`` covers the whole file up to ``new_offset`` (its items only when the parse started
    at byte 0 with ``with_items``); it is None when ``problem`` says the file cannot be used (yet).
    ``problem.retryable`` is True for a file caught mid-write (``TranscriptIncomplete``: read it
    again later, not an error) and False for a bad file. ``restarted`` is True when the parse
    ignored ``start_offset``/``state`` and read from byte 0 (the file shrank, was rewritten in place,
    or the state was not usable).
    """

    transcript: Transcript | None
    new_offset: int
    state: ParserState | None
    problem: TranscriptUnreadable | None = None
    restarted: bool = False
    bytes_read: int | None = None
    """The bytes this parse read, when they are not ``new_offset`` less where it resumed (a
    database source, whose offsets are versions of a session rather than bytes)."""

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def retryable(self) -> bool:
        return self.problem is not None and self.problem.retryable


@runtime_checkable
class SourceAdapter(Protocol):
    """One agent's transcript format."""

    source: str

    def discover(self, root: Path) -> Iterator[Path]:
        """The session files under ``root`` (the configured source root), de-duplicated."""
        ...

    def discover_paths(self, root: Path) -> Iterator[str]:
        """``discover`` as path strings: what the scanner walks, cheaply, every few minutes."""
        ...

    def parse(
        self,
        path: Path,
        start_offset: int = 0,
        state: ParserState | None = None,
        *,
        with_items: bool = True,
        max_bytes: int | None = None,
    ) -> ParseResult:
        """Parse ``path`` from ``start_offset``, resuming ``state``, reading no byte past
        ``max_bytes``; never raises."""
        ...


@runtime_checkable
class WalkingAdapter(SourceAdapter, Protocol):
    """An adapter that lists its sessions and their change keys itself, instead of the scanner's
    one ``stat`` per discovered file."""

    def walk(self, root: Path) -> list[Walked]:
        """Every session under ``root``: (path, change key, None), or (path, None, why it cannot
        be read); never raises."""
        ...


def last_guard(
    source: str,
    path: Path | str,
    start_offset: int,
    state: ParserState | None,
    parse: Callable[[], ParseResult],
) -> ParseResult:
    """``parse()``, or, if it raises anyway, the file as unreadable with the exception's type and text
    as the reason (and one log line naming the source and path, never the file's text): the last
    guard that keeps every adapter's promise never to raise on any input."""
    try:
        return parse()
    except Exception as exc:
        log.error("transcript_parse_crashed", source=source, path=str(path), error=type(exc).__name__)
        problem = TranscriptUnreadable(f"parser error: {type(exc).__name__}: {exc}")
        return ParseResult(None, start_offset, state, problem)
