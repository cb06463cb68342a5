"""`memd mcp`'s standard input and output: the streams the SDK's own stdio transport
(``mcp.server.stdio.stdio_server``) serves on, with what that transport leaves out, in one place.

- The protocol gets private copies of fds 0 and 1; fd 0 then reads nothing and fd 1 writes to
  stderr, so a stray print or a child process never corrupts the stream (as the SDK's transport
  does when it claims them itself).
- Each line is bounded: one over ``LINE_MAX_BYTES`` is answered with JSON-RPC ``INVALID_REQUEST``
  (naming the request's id when its start gives one) and read on to its end in chunks, never held
  whole in memory, and the SDK never sees it.
- One lock serializes every write to stdout: the SDK's messages and those errors.
- The client's end of input reaches the SDK only once it answered every request it was given (the
  SDK cancels a call still in flight when its input ends), or after ``END_WAIT_S``: a client may
  send its requests and close stdin at once.
- When the server cannot start, or stops before the client closed stdin, every request not read
  yet is answered with a JSON-RPC error naming why, and the process exits 1.
- The process ends with ``os._exit``, never through the interpreter's exit, which would stop the
  threads still there (the SDK's workers, the index's warm-up) mid-call and, now and then, abort
  ("FATAL: exception not rethrown").
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, NamedTuple, NoReturn

INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600
LINE_MAX_BYTES = 1 << 20
"""The longest JSON-RPC line taken (1 MiB; a tool's arguments are a few KiB at most): a longer one is
answered with ``INVALID_REQUEST`` and skipped to its end, never held whole in memory."""
HEAD_BYTES = 4096
"""How much of an over-long line is kept, to find the id of the request it answers."""
SKIP_CHUNK = 1 << 16
END_WAIT_S = 15.0
"""How long, at most, the SDK may go on answering what it was given once the client closed stdin
(it drops a malformed request unanswered: the count of what it will answer is a guess)."""
LISTEN = "subscriptions/listen"
"""A 2026 request whose answer is a stream that stays open while the client is there: never waited for."""


class TooLong(NamedTuple):
    """A line over the cap: its first ``HEAD_BYTES`` and its length (newline included)."""

    head: bytes
    size: int


class Pending:
    """The requests the SDK was given and has not answered yet, by id."""

    def __init__(self) -> None:
        self._ids: Counter[str] = Counter()
        self._changed = threading.Condition()

    def sent(self, line: bytes) -> None:
        """Count a request the SDK will answer (well-formed, not a listen); a cancellation uncounts."""
        message = _parse(line)
        if message is None or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return
        params = message.get("params")
        if "id" in message:
            plain = isinstance(message["id"], int | str) and not isinstance(message["id"], bool)
            if message["method"] != LISTEN and plain and (params is None or isinstance(params, dict)):
                with self._changed:
                    self._ids[_key(message["id"])] += 1
        elif message["method"] == "notifications/cancelled" and isinstance(params, dict):
            self.answered(params.get("requestId"))

    def written(self, text: str) -> None:
        """Uncount the request a message the SDK wrote answers."""
        message = _parse(text.encode("utf-8"))
        if message is not None and "method" not in message and ("result" in message or "error" in message):
            self.answered(message.get("id"))

    def answered(self, ident: Any) -> None:
        with self._changed:
            key = _key(ident)
            if self._ids[key] > 0:
                self._ids[key] -= 1
                self._ids += Counter()  # drops the ids at zero
                self._changed.notify_all()

    def outstanding(self) -> list[str]:
        """The ids (as JSON) still waited for, one per request."""
        with self._changed:
            return sorted(self._ids.elements())

    def wait(self, timeout: float) -> None:
        """Until every request counted is answered, or ``timeout``."""
        with self._changed:
            self._changed.wait_for(lambda: not self._ids, timeout)


class Output:
    """The client's stdout: each message written whole, under one lock."""

    def __init__(self, stream: BinaryIO, pending: Pending) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._pending = pending

    def line(self, text: str) -> None:
        """Write one message (one JSON text, no newline)."""
        self._write(text.encode("utf-8") + b"\n")

    async def write(self, text: str) -> None:
        """The SDK's transport writes each message as ``write(json + "\\n")``, then ``flush()``."""
        self._write(text.encode("utf-8"))
        self._pending.written(text)

    async def flush(self) -> None:
        return None

    def error(self, ident: Any, code: int, message: str) -> None:
        error = {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
        self.line(json.dumps(error, ensure_ascii=False, separators=(",", ":")))

    def too_long(self, line: TooLong) -> None:
        """Refuse a line over ``LINE_MAX_BYTES``, naming its request's id when its start gives one."""
        message = f"memd mcp takes requests of at most {LINE_MAX_BYTES} bytes; this one had {line.size}"
        self.error(_head_id(line.head), INVALID_REQUEST, message)

    def _write(self, data: bytes) -> None:
        with self._lock:
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):  # the client is gone; its stdin ends next
                pass


class Input:
    """The client's lines as the SDK's transport reads a text file (``async for line in``), each
    read in a worker thread and bounded; a line over the cap is refused on ``out`` and skipped."""

    def __init__(self, stream: BinaryIO, out: Output, pending: Pending) -> None:
        self._lines = bounded_lines(stream)
        self._lock = threading.Lock()
        self._out = out
        self._pending = pending

    def __aiter__(self) -> Input:
        return self

    async def __anext__(self) -> str:
        import anyio.to_thread

        line = await anyio.to_thread.run_sync(self._next, abandon_on_cancel=True)
        if line is None:
            await anyio.to_thread.run_sync(self._pending.wait, END_WAIT_S, abandon_on_cancel=True)
            raise StopAsyncIteration
        self._pending.sent(line)
        return line.decode("utf-8", errors="replace")

    def _next(self) -> bytes | None:
        """The next line within the cap (an over-long one refused on the way), None at the end."""
        with self._lock:
            for line in self._lines:
                if not isinstance(line, TooLong):
                    return line
                self._out.too_long(line)
            return None

    def refuse_rest(self, reason: str) -> None:
        """Answer every request left on the input with ``reason``, until the client closes it."""
        while (line := self._next()) is not None:
            message = _parse(line)
            if message is not None and isinstance(message.get("method"), str) and "id" in message:
                self._out.error(message["id"], INTERNAL_ERROR, f"memd mcp could not serve: {reason}")


def run(serve: Callable[[Input, Output], None]) -> NoReturn:
    """Serve the process's stdin and stdout with ``serve`` (the SDK's server, until the client's
    input ends), then end the process: status 0, or 1 when ``serve`` failed (every request left is
    then answered with why)."""
    in_fd, out_fd = _claim_stdio()
    pending = Pending()
    out = Output(os.fdopen(out_fd, "wb", closefd=False), pending)
    lines = Input(os.fdopen(in_fd, "rb", closefd=False), out, pending)
    try:
        serve(lines, out)
    except BaseException as exc:  # whatever stopped it is the reason told to the client
        reason = f"{type(exc).__name__}: {exc}"
        sys.stderr.write(f"memd mcp: {reason}\n")
        lines.refuse_rest(reason)
        _exit(1)
    _exit(0)


def bounded_lines(stream: BinaryIO, max_bytes: int = LINE_MAX_BYTES) -> Iterator[bytes | TooLong]:
    """The lines of ``stream``, each read whole only when it is at most ``max_bytes`` long (newline
    aside); a longer one is read on in chunks and dropped, ``TooLong`` standing for it."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if line.endswith(b"\n") or len(line) <= max_bytes:
            yield line
            continue
        head, size = line[:HEAD_BYTES], len(line)
        del line
        while True:
            chunk = stream.readline(SKIP_CHUNK)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        yield TooLong(head, size)


def _head_id(head: bytes) -> Any:
    """The top-level ``"id"`` of a request from the start of its text, when it is there whole (a
    number or a short string); None otherwise (the JSON-RPC id of an error with no request id)."""
    text = head.decode("utf-8", "ignore")
    depth, i, key, expect_key = 0, 0, None, False
    while i < len(text):
        ch = text[i]
        if ch == '"':
            end = _string_end(text, i)
            if end < 0:
                return None
            if depth == 1 and expect_key:
                key = text[i : end + 1]
            i = end + 1
            continue
        if ch in "{[":
            depth += 1
            expect_key = ch == "{" and depth == 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 1:
            expect_key = True
        elif ch == ":" and depth == 1 and key is not None:
            expect_key = False
            if key == '"id"':
                value = re.match(r'\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*[,}]', text[i + 1 :])
                return json.loads(value.group(1)) if value else None
            key = None
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    """The index of the quote closing the JSON string opening at ``start`` (-1: not in ``text``)."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return -1


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return None
    return message if isinstance(message, dict) else None


def _key(ident: Any) -> str:
    return json.dumps(ident)


def _exit(status: int) -> NoReturn:
    """End now, whatever threads are left (see the module's text)."""
    sys.stderr.flush()
    os._exit(status)


def _claim_stdio() -> tuple[int, int]:
    """Private copies of fds 0 and 1 for the protocol; fd 0 then reads nothing and fd 1 writes to
    stderr (see the module's text)."""
    in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return in_fd, out_fd
