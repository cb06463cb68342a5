"""JSON Lines as agents really write them: only newline-terminated lines count, and a bad line is a
counted error, never an exception (whatever the decoder raises: a line nested too deeply to decode
costs that line only).

Repairs: NUL runs are dropped, invalid UTF-8 is replaced, two records glued together (``}{``) are
split, and a torn record followed by a whole one on the same line gives up the torn part only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

MAX_LINE_BYTES = 64 * 1024 * 1024
RECOVERY_MAX_BYTES = 1024 * 1024
RECOVERY_MAX_ATTEMPTS = 64

NESTED_TOO_DEEPLY = "JSON nested too deeply to read"

_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class RawLine:
    """One complete line (without its newline); ``data`` is None for a line over ``MAX_LINE_BYTES``."""

    data: bytes | None
    end_offset: int


def iter_lines(
    chunks: Iterable[bytes], start_offset: int, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[RawLine]:
    """The newline-terminated lines in ``chunks`` (which start at ``start_offset``). A trailing
    partial line is not yielded: it waits for the writer to finish it."""
    buffer = bytearray()
    buffer_start = start_offset
    oversized = False
    for chunk in chunks:
        if not chunk:
            continue
        search_from = len(buffer)  # what is already buffered holds no newline: never searched twice
        buffer += chunk
        while True:
            newline = buffer.find(b"\n", search_from)
            if newline < 0:
                break
            end = buffer_start + newline + 1
            too_long = oversized or newline > max_line_bytes
            yield RawLine(None if too_long else bytes(buffer[:newline]), end)
            oversized = False
            del buffer[: newline + 1]
            buffer_start = end
            search_from = 0
        if len(buffer) > max_line_bytes:
            oversized = True
            buffer_start += len(buffer)
            buffer.clear()


def decode_line(line: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """The JSON objects on one line (usually one) and, if part of the line was unusable, why."""
    had_nul = b"\x00" in line
    if had_nul:
        line = line.replace(b"\x00", b"")
    text = line.decode("utf-8", errors="replace").strip()
    if not text:
        return [], ("a run of NUL bytes" if had_nul else None)
    try:
        value = json.loads(text)
    except RecursionError:
        return [], NESTED_TOO_DEEPLY
    except ValueError as exc:
        try:
            return _recover(text, exc)
        except RecursionError:
            return [], NESTED_TOO_DEEPLY
    except Exception as exc:  # whatever the decoder raises costs this line only
        return [], f"unreadable line ({type(exc).__name__})"
    if isinstance(value, dict):
        return [value], None
    kind = "a JSON array" if isinstance(value, list) else f"a JSON {type(value).__name__}"
    return [], f"{kind}, not a record"


def _next_candidate(text: str, after: int) -> int:
    return text.find('{"', after + 1)


def _recover(text: str, exc: ValueError) -> tuple[list[dict[str, Any]], str | None]:
    """Split glued records and skip a torn one; bounded so a huge garbage line stays cheap."""
    reason = f"invalid JSON ({exc})"
    if len(text) > RECOVERY_MAX_BYTES:
        return [], reason
    records: list[dict[str, Any]] = []
    torn = False
    pos = 0
    attempts = 0
    while pos < len(text) and attempts < RECOVERY_MAX_ATTEMPTS:
        attempts += 1
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            torn = True
            pos = _next_candidate(text, pos)
            if pos < 0:
                break
            continue
        if isinstance(value, dict):
            records.append(value)
        while end < len(text) and text[end] in " \t\r,":
            end += 1
        pos = end
    if not records:
        return [], reason
    if torn or pos < len(text):
        return records, f"torn or spliced line: kept {len(records)} record(s)"
    return records, None
