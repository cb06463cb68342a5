"""The incremental JSON Lines driver every JSONL adapter shares.

A parse reads from ``start_offset`` to the last newline, feeds each record to the adapter, and
returns the new offset with the summary state. Resuming checks that the file still starts with the
bytes it started with (a fingerprint of its head) and is not shorter than the offset; otherwise the
file was rewritten (Pi migration, a Codex ``.jsonl.zst`` decompressed back) and the parse starts
again from byte 0. A ``.jsonl.zst`` is always read whole: it is written once, by compression.

Bounded on any file: a line over ``MAX_LINE_BYTES`` is skipped (never held whole); a ``.jsonl.zst``
is decompressed ``ZST_INPUT_SLICE`` compressed bytes at a time, so no piece is larger than a few
tens of MB however the stream was made, and one that decompresses to more than
``MAX_DECOMPRESSED_BYTES``, or to more than ``MAX_ZST_RATIO`` times its size (past
``ZST_RATIO_FLOOR_BYTES``), is unreadable with that reason (a 32 KB file of one repeated byte
decompressed to 1 GiB in a single call before).
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import structlog

from pipeline.errors import TranscriptIncomplete, TranscriptUnreadable
from pipeline.safefile import open_regular
from pipeline.sources import registry
from pipeline.sources._collector import Collector, Summary
from pipeline.sources._discover import describe_os_error
from pipeline.sources._lines import MAX_LINE_BYTES, RawLine, decode_line, iter_lines
from pipeline.sources.base import ParseResult, ParserState, last_guard
from pipeline.transcript import Transcript

log = structlog.get_logger(__name__)

HEAD_BYTES = 4096
TAIL_BYTES = 4096
CHUNK_BYTES = 1024 * 1024
ZST_INPUT_SLICE = 512
"""Compressed bytes handed to the decompressor at once: zstd makes at most 128 KiB from a block of
a few bytes, so no call returns more than a few tens of MB whatever the file holds."""
MAX_DECOMPRESSED_BYTES = 4 << 30
"""A compressed transcript decompressing to more than this is not read."""
MAX_ZST_RATIO = 256
ZST_RATIO_FLOOR_BYTES = 256 << 20
"""Nor one decompressing to more than ``MAX_ZST_RATIO`` times its size, past this floor (a
rollout's JSON compresses about tenfold, a very repetitive one some tens of times; a bomb of one
repeated byte, thousands of times). Memory is bounded either way: these bound the time."""
_RECALL_BYTES = b"<memd-recall"


class _CorruptZst(Exception):
    pass


class _ByteSource:
    """A transcript's bytes: a plain file (seekable) or a zstd-compressed one (streamed).

    Opened without blocking and checked on the descriptor (``pipeline.safefile.open_regular``): a
    FIFO, a device or a directory swapped in for the transcript is ``UnsafeFile``, never a hang or
    an endless read. No more than ``max_bytes`` (the size the scan saw) nor the size at the open is
    read: bytes written after that wait for the next parse."""

    def __init__(self, path: Path, max_bytes: int | None = None) -> None:
        self.compressed = path.name.endswith(".zst")
        fd, info = open_regular(path)
        self._file: BinaryIO = os.fdopen(fd, "rb")
        self.size = info.st_size
        self.limit = info.st_size if max_bytes is None else max(0, min(info.st_size, max_bytes))
        self.eof_offset = 0

    def close(self) -> None:
        self._file.close()

    def _raw_chunks(self) -> Iterator[bytes]:
        left = self.limit - self._file.tell()
        while left > 0 and (chunk := self._file.read(min(CHUNK_BYTES, left))):
            left -= len(chunk)
            yield chunk

    def read_at(self, offset: int, n_bytes: int) -> bytes:
        """The plain file's bytes ``[offset, offset + n_bytes)`` (fewer at the limit)."""
        self._file.seek(offset)
        return self._file.read(max(0, min(n_bytes, self.limit - offset)))

    def decompressed_limit(self) -> int:
        """The most a compressed transcript may decompress to (``MAX_DECOMPRESSED_BYTES``,
        ``MAX_ZST_RATIO``)."""
        return min(MAX_DECOMPRESSED_BYTES, max(ZST_RATIO_FLOOR_BYTES, MAX_ZST_RATIO * self.limit))

    def _decompressed(self) -> Iterator[bytes]:
        """The decompressed bytes, made ``ZST_INPUT_SLICE`` compressed bytes at a time (each piece
        bounded), at most ``decompressed_limit`` in all (more is ``_CorruptZst``)."""
        import zstandard  # only for a compressed transcript: an idle daemon without one never loads it

        self._file.seek(0)
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        in_frame = False
        limit, total = self.decompressed_limit(), 0
        try:
            for chunk in self._raw_chunks():
                for start in range(0, len(chunk), ZST_INPUT_SLICE):
                    piece = chunk[start : start + ZST_INPUT_SLICE]
                    while piece:
                        out = decompressor.decompress(piece)
                        in_frame = True
                        if out:
                            total += len(out)
                            if total > limit:
                                raise _CorruptZst(
                                    f"decompresses to over {limit} bytes ({self.limit} compressed): not read"
                                )
                            yield out
                        piece = b""
                        if decompressor.eof:  # a frame ended; the rest may be another frame
                            piece = decompressor.unused_data
                            decompressor = zstandard.ZstdDecompressor().decompressobj()
                            in_frame = False
        except zstandard.ZstdError as exc:
            raise _CorruptZst(f"corrupt zstd stream: {exc}") from exc
        if in_frame:
            raise _CorruptZst("truncated zstd stream (the compressed file is incomplete)")

    def head(self, n_bytes: int) -> bytes:
        if not self.compressed:
            return self.read_at(0, n_bytes)
        data = bytearray()
        for chunk in self._decompressed():
            data += chunk
            if len(data) >= n_bytes:
                break
        return bytes(data[:n_bytes])

    def chunks(self, offset: int) -> Iterator[bytes]:
        """The bytes from ``offset`` to the end; sets ``eof_offset`` once exhausted."""
        if self.compressed:
            position = 0
            for chunk in self._decompressed():
                position += len(chunk)
                yield chunk
            self.eof_offset = position
            return
        self._file.seek(offset)
        position = offset
        for chunk in self._raw_chunks():
            position += len(chunk)
            yield chunk
        self.eof_offset = position


def _unchanged(source: _ByteSource, summary: Summary, offset: int) -> bool:
    """Whether the file still holds the bytes the last parse read up to ``offset``: not shorter, the
    same head, and the same bytes just before the offset (a file truncated and then grown past its
    old size keeps its head but not those)."""
    if source.compressed or source.size < offset or source.limit < offset or summary.head_len <= 0:
        return False
    if hashlib.sha256(source.head(summary.head_len)).hexdigest() != summary.head_sha:
        return False
    if summary.tail_len <= 0:  # a state from before the tail was kept
        return True
    tail = source.read_at(offset - summary.tail_len, summary.tail_len)
    return hashlib.sha256(tail).hexdigest() == summary.tail_sha


def _remember_tail(source: _ByteSource, summary: Summary, offset: int) -> None:
    """Fingerprint the bytes just before ``offset``, where the next parse resumes."""
    if source.compressed or offset <= 0:
        summary.tail_len, summary.tail_sha = 0, ""
        return
    tail = source.read_at(offset - min(TAIL_BYTES, offset), min(TAIL_BYTES, offset))
    summary.tail_len, summary.tail_sha = len(tail), hashlib.sha256(tail).hexdigest()


def _first_char(head: bytes) -> str:
    stripped = head.lstrip(b" \t\r\n\x00\xef\xbb\xbf")
    return chr(stripped[0]) if stripped and stripped[0] < 128 else ("?" if stripped else "")


class JsonlAdapter(ABC):
    """Shared machinery; a format implements ``feed`` (and optionally ``begin``/``finish``)."""

    source: str

    @abstractmethod
    def feed(self, c: Collector, record: dict[str, Any], has_recall: bool) -> bool:
        """Fold one record in; True if it is a record of this format (known or skipped on purpose)."""

    def begin(self, c: Collector, path: Path) -> None:  # noqa: B027 - an optional hook
        """Set what the path says (sub-agent file, compaction run) before the first record."""

    def finish(self, c: Collector, path: Path, offset: int) -> Transcript:
        return c.transcript(path, offset, fallback_id=self.fallback_session_id(path))

    def fallback_session_id(self, path: Path) -> str:
        name = path.name
        for suffix in (".zst", ".jsonl", ".json"):
            name = name.removesuffix(suffix)
        return name

    def parse(
        self,
        path: Path,
        start_offset: int = 0,
        state: ParserState | None = None,
        *,
        with_items: bool = True,
        max_bytes: int | None = None,
    ) -> ParseResult:
        return last_guard(
            self.source,
            path,
            start_offset,
            state,
            lambda: self._parse(path, start_offset, state, with_items, max_bytes),
        )

    def _parse(
        self,
        path: Path,
        start_offset: int,
        state: ParserState | None,
        with_items: bool,
        max_bytes: int | None,
    ) -> ParseResult:
        summary = Summary.from_state(state, self.source) if start_offset > 0 else None
        restarted = start_offset > 0 and summary is None
        try:
            source = _ByteSource(path, max_bytes)
        except OSError as exc:
            return ParseResult(None, start_offset, state, describe_os_error(path, exc))
        try:
            if summary is not None and not _unchanged(source, summary, start_offset):
                summary, restarted = None, True
            if summary is None:
                summary, start_offset = Summary(source=self.source), 0
            collector = Collector(summary, self.source, with_items=with_items and start_offset == 0)
            if start_offset == 0:
                self.begin(collector, path)
            new_offset = start_offset
            for raw in iter_lines(source.chunks(start_offset), start_offset):
                self._consume(collector, raw)
                new_offset = raw.end_offset
            if summary.head_len == 0 and new_offset > 0:
                head = source.head(min(HEAD_BYTES, new_offset))
                summary.head_len, summary.head_sha = len(head), hashlib.sha256(head).hexdigest()
            if new_offset != start_offset or summary.tail_len == 0:
                _remember_tail(source, summary, new_offset)
            head_char = summary.first_byte or _first_char(source.head(256))
        except _CorruptZst as exc:
            return ParseResult(None, start_offset, None, TranscriptUnreadable(str(exc)), restarted)
        except OSError as exc:
            return ParseResult(None, start_offset, state, describe_os_error(path, exc), restarted)
        finally:
            source.close()
        problem = self._problem(summary, source.eof_offset, head_char)
        transcript = None if problem is not None else self.finish(collector, path, new_offset)
        return ParseResult(transcript, new_offset, summary.to_state(), problem, restarted)

    def _consume(self, c: Collector, raw: RawLine) -> None:
        s = c.s
        s.lines += 1
        if raw.data is None:
            s.note_error(f"line {s.lines}: longer than {MAX_LINE_BYTES} bytes, skipped")
            return
        records, error = decode_line(raw.data)
        if error:
            s.note_error(f"line {s.lines}: {error}")
        if not s.first_byte:
            s.first_byte = _first_char(raw.data)
        has_recall = _RECALL_BYTES in raw.data
        for record in records:
            s.records += 1
            try:
                recognized = self.feed(c, record, has_recall)
            except Exception as exc:  # a record the adapter cannot take costs that record only
                s.note_error(f"line {s.lines}: unreadable record ({type(exc).__name__})")
                continue
            if recognized:
                s.recognized += 1

    def _problem(self, s: Summary, eof_offset: int, head_char: str) -> TranscriptUnreadable | None:
        if s.lines == 0:
            if eof_offset == 0:
                return TranscriptIncomplete("the file is empty")
            if head_char == "{":
                return TranscriptIncomplete(f"no complete line yet ({eof_offset} bytes without a newline)")
        if s.records == 0:
            if head_char == "[":
                return TranscriptUnreadable("a JSON array where JSON Lines belong")
            if s.lines > 0 and s.first_error is None:
                return TranscriptUnreadable(f"no record: {s.lines} blank line(s)")
            detail = f"; first error: {s.first_error}" if s.first_error else ""
            if head_char != "{":
                return TranscriptUnreadable(f"not JSON Lines (binary or unknown content){detail}")
            return TranscriptUnreadable(f"no readable record in {s.lines} line(s){detail}")
        if s.recognized == 0:
            return TranscriptUnreadable(
                f"not a {registry.label_of(self.source)} transcript: none of its {s.records} record(s) fits"
            )
        return None
