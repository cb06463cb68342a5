"""The front of `memd mcp`: reads the client's JSON-RPC lines at once, with the standard library only,
while the SDK loads on a thread (importing it alone takes about a second of CPU).

Until the SDK serves, the front answers the requests agents open a session with itself, from
``frozen.json`` (what the real SDK server answers, made and checked by ``daemon.mcp.frozen``), in
either era the SDK serves, decided as the SDK decides it by the client's first request:

- a handshake session (``initialize`` first, then ``notifications/initialized``): ``initialize``,
  then ``tools/list``, ``prompts/list``, ``resources/list`` and ``ping`` (Codex, Qwen Code);
- a 2026 session (the first request carries the per-request envelope in ``params._meta``):
  ``server/discover``, ``tools/list``, ``prompts/list`` and ``resources/list``, each carrying its
  envelope (Claude Code; 2026 has no ``ping``), and the acknowledgement that opens the stream of a
  ``subscriptions/listen`` asking for the list changes the frozen one asked for (Claude Code waits
  for it before it lists the tools; the stream itself, and its end, are the SDK's).

It answers only a request whose params it knows the SDK's answer to (nothing but the ``_meta``
keys of the envelope and a ``progressToken``; a ``cursor``, say, is left to the SDK), and only when
the file was made by this memd and this SDK; anything else waits for the SDK. Every line still goes
to the SDK, in order, once it serves; the SDK's own answer to a request the front answered is
dropped (matched by id, or by subscription for an acknowledgement; one that differs is logged),
every other message it writes is written as is. One lock serializes every write to stdout. When the SDK cannot start, every request not answered
yet, and every later one, gets a JSON-RPC error naming the reason, and the process exits non-zero
when the client closes stdin.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import queue
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, NoReturn

FROZEN = Path(__file__).with_name("frozen.json")
EARLY = ("initialize", "tools/list", "prompts/list", "resources/list", "ping")
"""The requests of a handshake session the front may answer before the SDK serves."""
MODERN_EARLY = ("server/discover", "tools/list", "prompts/list", "resources/list")
"""The requests of a 2026 session (every request carrying its envelope) the front may answer."""
LISTEN = "subscriptions/listen"
"""A 2026 request whose answer is a stream that stays open while the client is there: never waited for."""
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
"""The notification that opens a ``subscriptions/listen`` stream."""
INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600
LINE_MAX_BYTES = 1 << 20
"""The longest JSON-RPC line taken (1 MiB; a tool's arguments are a few KiB at most): a longer one is
answered with ``INVALID_REQUEST`` and skipped to its end, never held whole in memory."""
HEAD_BYTES = 4096
"""How much of an over-long line is kept, to find the id of the request it answers."""
SKIP_CHUNK = 1 << 16
QUEUE_MAX = 32
"""Lines waiting for the SDK at most: the front stops reading stdin until it takes more."""
END_WAIT_S = 15.0
"""How long, at most, the SDK may go on answering what it was sent once the client closed stdin
(it drops a malformed request unanswered: the count of what it will answer is a guess)."""
_MODERN_META_PREFIX = "io.modelcontextprotocol/"
_PROTOCOL_VERSION = _MODERN_META_PREFIX + "protocolVersion"
_CLIENT_INFO = _MODERN_META_PREFIX + "clientInfo"
_CLIENT_CAPABILITIES = _MODERN_META_PREFIX + "clientCapabilities"
SUBSCRIPTION_ID = _MODERN_META_PREFIX + "subscriptionId"
_IMPLEMENTATION_TEXT = ("title", "description", "websiteUrl")
"""The optional text fields of a client's ``Implementation`` the front lets by (the SDK ignores them)."""


def sdk_version() -> str | None:
    """The installed ``mcp`` distribution's version, read from its ``dist-info`` without importing it."""
    spec = importlib.util.find_spec("mcp")
    if spec is None or spec.origin is None:
        return None
    for info in Path(spec.origin).parent.parent.glob("mcp-*.dist-info"):
        version = info.name[len("mcp-") : -len(".dist-info")]
        if version[:1].isdigit():
            return version
    return None


def load_frozen(memd_version: str) -> dict[str, Any] | None:
    """The frozen answers, or ``None`` (the SDK answers everything) when they were not made by this
    memd and this SDK or cannot be read."""
    try:
        frozen: dict[str, Any] = json.loads(FROZEN.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if frozen.get("memd") != memd_version or frozen.get("mcp") != sdk_version():
        return None
    return frozen


class Front:
    """What stands between the client's stdio and the SDK's session (see the module's text)."""

    def __init__(self, frozen: dict[str, Any] | None, out: BinaryIO) -> None:
        self.lines: queue.Queue[bytes | None] = queue.Queue(QUEUE_MAX)
        """Every line of the client, in order, for the SDK; ``None`` once stdin is closed. Bounded:
        a client sending faster than the SDK answers waits (its pipe fills), memory does not grow."""
        self._frozen = frozen
        self._out = out
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._serving = False
        self._ended = False
        self.failure: str | None = None
        self._answered: dict[str, tuple[str, Any]] = {}
        self._acknowledged: dict[str, Any] = {}
        """The params of each acknowledgement the front sent, by its subscription (request) id."""
        self._unanswered: Counter[str] = Counter()
        self.drained = threading.Event()
        """Set once stdin is closed and the SDK answered every request it was given."""
        self._version: str | None = None
        self._era: str | None = None
        """``"handshake"`` or ``"modern"``, decided by the client's first request, as the SDK does."""
        self._initialized = False
        self._requests = 0
        self.early: list[str] = []
        """The methods the front answered itself, in order (for tests and the debug log)."""

    def write(self, text: str) -> None:
        """Write one message, whole: the only place anything reaches stdout."""
        with self._write_lock:
            try:
                self._out.write(text.encode("utf-8") + b"\n")
                self._out.flush()
            except (OSError, ValueError):  # the client is gone; its stdin ends next
                pass

    def from_client(self, line: bytes) -> None:
        message = _parse(line)
        with self._lock:
            if self.failure is not None:
                self._refuse(message)
                return
            if not self._serving and self._frozen is not None and message is not None:
                self._answer_early(message)
            if message is not None:
                self._count(message)
        self.lines.put(line)  # outside the lock: it may wait for the SDK, which writes under it
        if self._failed():  # the SDK stopped meanwhile: it will never read this line
            with self._lock:
                self._refuse_waiting()

    def _failed(self) -> bool:
        return self.failure is not None

    def too_long(self, head: bytes, size: int) -> None:
        """A line over ``LINE_MAX_BYTES`` (``head``: its start): refused with a JSON-RPC error naming
        the request's id when its start gives one, never handed to the SDK."""
        ident = _head_id(head)
        error = {
            "code": INVALID_REQUEST,
            "message": f"memd mcp takes requests of at most {LINE_MAX_BYTES} bytes; this one had {size}",
        }
        self.write(_dump({"jsonrpc": "2.0", "id": ident, "error": error}))

    def from_server(self, text: str) -> None:
        """A message the SDK wrote (one JSON text): dropped when the front already answered it."""
        message = _parse(text.encode("utf-8"))
        if message is not None and message.get("method") == ACKNOWLEDGED and self._acknowledged:
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            with self._lock:
                sent = (
                    self._acknowledged.pop(_key(meta.get(SUBSCRIPTION_ID)), None)
                    if isinstance(meta, dict)
                    else None
                )
            if sent is not None:
                if params != sent:
                    sys.stderr.write(
                        f"memd mcp: the SDK's {LISTEN} acknowledgement differs from frozen.json\n"
                    )
                return
        if message is not None and "method" not in message and ("result" in message or "error" in message):
            with self._lock:
                key = _key(message.get("id"))
                early = self._answered.pop(key, None)
                if self._unanswered[key] > 0:
                    self._unanswered[key] -= 1
                    self._unanswered += Counter()  # drops the ids at zero
                if self._ended and not self._outstanding():
                    self.drained.set()
            if early is not None:
                method, result = early
                if message.get("result") != result:
                    sys.stderr.write(f"memd mcp: the SDK's answer to {method} differs from frozen.json\n")
                return
        self.write(text)

    def serving(self) -> None:
        """The SDK reads the client's lines now: it answers everything from here on."""
        with self._lock:
            self._serving = True

    def end(self) -> bool:
        """The client closed stdin: the SDK's lines end once it answered what it was given and the
        front did not (a stream that ends under a request in flight would cancel it), or after
        ``END_WAIT_S``. Returns whether the SDK is needed no more: it does not serve yet and the
        front answered everything (a session that never called a tool does not wait for it)."""
        with self._lock:
            self._ended = True
            if not self._outstanding() or self.failure is not None:
                self.drained.set()
        self.drained.wait(END_WAIT_S)
        self.lines.put(None)
        with self._lock:
            return not self._serving and not self._outstanding() and self.failure is None

    def _outstanding(self) -> bool:
        """Whether a request the front did not answer waits for the SDK's answer."""
        return any(key not in self._answered for key in self._unanswered)

    def stopped(self, reason: str | None) -> None:
        """The SDK's thread ended (``reason``: why it failed, if it did): a request not answered yet,
        and every later one, is answered with an error; an end before stdin closed is a failure."""
        self.drained.set()  # nothing more will be answered
        with self._lock:
            if reason is None and self._ended:
                return
            self.failure = reason or "the server stopped"
            sys.stderr.write(f"memd mcp: {self.failure}\n")
            self._refuse_waiting()

    def _refuse_waiting(self) -> None:
        """Answer every line still waiting for the SDK with the failure (under the lock)."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self._refuse(_parse(line))

    def _count(self, message: dict[str, Any]) -> None:
        """Keep count of the requests the SDK will answer (a well-formed one, not cancelled since)."""
        if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return
        params = message.get("params")
        if "id" in message:
            if message["method"] == LISTEN:
                return
            if _plain_id(message["id"]) and (params is None or isinstance(params, dict)):
                self._unanswered[_key(message["id"])] += 1
        elif message["method"] == "notifications/cancelled" and isinstance(params, dict):
            key = _key(params.get("requestId"))
            if self._unanswered[key] > 0:
                self._unanswered[key] -= 1
            self._unanswered += Counter()

    def _refuse(self, message: dict[str, Any] | None) -> None:
        if message is None or not isinstance(message.get("method"), str) or "id" not in message:
            return
        if self._answered.pop(_key(message["id"]), None) is not None:
            return
        error = {"code": INTERNAL_ERROR, "message": f"memd mcp could not serve: {self.failure}"}
        self.write(_dump({"jsonrpc": "2.0", "id": message["id"], "error": error}))

    def _answer_early(self, message: dict[str, Any]) -> None:
        assert self._frozen is not None
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return
        if "id" not in message:
            if method == "notifications/initialized" and self._version is not None:
                self._initialized = True
            return
        ident = message["id"]
        self._requests += 1
        params = message.get("params")
        if self._era is None:  # the SDK's rule: an enveloped first request opens a 2026 session
            modern = method != "initialize" and isinstance(params, dict) and _enveloped(params)
            self._era = "modern" if modern else "handshake"
        if not _plain_id(ident) or _key(ident) in self._answered or _key(ident) in self._acknowledged:
            return
        if self._era == "modern" and method == LISTEN:
            self._acknowledge(ident, params)
            return
        if self._era == "modern":
            result = self._modern_answer(method, params)
        else:
            result = self._handshake_answer(method, params)
        if result is None:
            return
        self._answered[_key(ident)] = (method, result)
        self.early.append(method)
        self.write(_dump({"jsonrpc": "2.0", "id": ident, "result": result}))

    def _acknowledge(self, ident: Any, params: Any) -> None:
        """Open a ``subscriptions/listen`` stream as the SDK does: its acknowledgement, naming the
        request as the subscription, when the request asks for what the frozen one asked for."""
        assert self._frozen is not None
        if not isinstance(params, dict) or set(params) != {"_meta", "notifications"}:
            return
        meta = params["_meta"]
        version = meta.get(_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        frozen = self._frozen.get("modern", {}).get(version, {}).get(LISTEN)
        if frozen is None or not _plain_envelope(meta) or params["notifications"] != frozen["notifications"]:
            return
        acknowledgement = json.loads(json.dumps(frozen["acknowledged"]))
        acknowledgement["params"]["_meta"][SUBSCRIPTION_ID] = ident
        self._acknowledged[_key(ident)] = acknowledgement["params"]
        self.early.append(LISTEN)
        self.write(_dump(acknowledgement))

    def _handshake_answer(self, method: str, params: Any) -> Any:
        assert self._frozen is not None
        answers: dict[str, Any] = self._frozen["answers"]
        if method == "initialize":
            if self._requests != 1 or not _plain_initialize(params):
                return None
            requested = params.get("protocolVersion")
            self._version = requested if requested in answers else self._frozen["latest"]
            return answers[self._version][method]
        if method not in EARLY or not self._initialized or not _plain_params(params):
            return None
        assert self._version is not None
        return answers[self._version][method]

    def _modern_answer(self, method: str, params: Any) -> Any:
        assert self._frozen is not None
        modern: dict[str, Any] = self._frozen.get("modern", {})
        if method not in MODERN_EARLY or not isinstance(params, dict) or set(params) != {"_meta"}:
            return None
        meta = params["_meta"]
        version = meta.get(_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        if version not in modern or not _plain_envelope(meta):
            return None
        return modern[version][method]


def run(frozen: dict[str, Any] | None, backend: Callable[[Front], None]) -> NoReturn:
    """Serve the process's stdin/stdout: the front here, ``backend(front)`` (the SDK, which takes
    ``front.lines``, writes through ``front.from_server`` and calls ``front.serving()``) on a thread.
    Ends the process itself, with status 0, or 1 when the SDK could not serve (see ``Front.end``):
    never through the interpreter's exit, which would stop the threads still there (the SDK's
    workers, the index's warm-up) mid-call and, now and then, abort ("exception not rethrown")."""
    in_fd, out_fd = _claim_stdio()
    front = Front(frozen, os.fdopen(out_fd, "wb", closefd=False))

    def sdk() -> None:
        try:
            backend(front)
        except BaseException as exc:  # whatever stopped it is the reason told to the client
            front.stopped(f"{type(exc).__name__}: {exc}")
        else:
            front.stopped(None)

    thread = threading.Thread(target=sdk, name="memd-mcp-sdk", daemon=True)
    thread.start()
    with os.fdopen(in_fd, "rb", closefd=False) as stdin:
        for line in bounded_lines(stdin):
            if isinstance(line, TooLong):
                front.too_long(line.head, line.size)
            else:
                front.from_client(line)
    if front.end():
        _exit(0)
    thread.join(END_WAIT_S)
    status = 1 if front.failure is not None or thread.is_alive() else 0
    _exit(status)


class TooLong(NamedTuple):
    """A line over the cap: its first ``HEAD_BYTES`` and its length (newline included)."""

    head: bytes
    size: int


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


def _exit(status: int) -> NoReturn:
    """End now, with the SDK's thread (or a thread it started) still importing, serving or waiting:
    an interpreter's normal exit would wait on the import locks that thread holds, or stop it mid-call
    (a daemon thread that wakes during finalization is ended by a forced unwind, which aborts the
    process now and then)."""
    sys.stderr.flush()
    os._exit(status)


def _claim_stdio() -> tuple[int, int]:
    """Private copies of fds 0 and 1 for the protocol; fd 0 then reads nothing and fd 1 writes to
    stderr, so a stray print or a child process never corrupts the stream (as the SDK's transport)."""
    in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return in_fd, out_fd


def _plain_initialize(params: Any) -> bool:
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info = params.get("clientInfo")
    meta = params.get("_meta", {})
    return (
        isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
        and isinstance(meta, dict)
        and not any(str(k).startswith(_MODERN_META_PREFIX) for k in meta)
    )


def _plain_params(params: Any) -> bool:
    """No params, or only a ``_meta`` with nothing but a ``progressToken`` (what Codex sends): the
    SDK answers these as it answers none."""
    if params is None or params == {}:
        return True
    if not isinstance(params, dict) or set(params) != {"_meta"} or not isinstance(params["_meta"], dict):
        return False
    meta = params["_meta"]
    return set(meta) <= {"progressToken"} and all(_plain_id(v) for v in meta.values())


def _enveloped(params: dict[str, Any]) -> bool:
    """Whether ``params._meta`` names a 2026 protocol version (the SDK's test of a 2026 request)."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and _PROTOCOL_VERSION in meta


def _plain_envelope(meta: dict[str, Any]) -> bool:
    """A 2026 envelope whose answer the SDK gives whoever the client is: the version (checked by the
    caller), the client's capabilities, its ``Implementation`` when given, a ``progressToken``, and
    nothing else."""
    if not set(meta) <= {_PROTOCOL_VERSION, _CLIENT_INFO, _CLIENT_CAPABILITIES, "progressToken"}:
        return False
    if not _plain_capabilities(meta.get(_CLIENT_CAPABILITIES)):
        return False
    if "progressToken" in meta and not _plain_id(meta["progressToken"]):
        return False
    return _CLIENT_INFO not in meta or _implementation(meta[_CLIENT_INFO])


_CAPABILITY_PARTS = {"elicitation": ("form", "url"), "sampling": ("context", "tools")}
"""The 2026 capabilities whose members the SDK reads as objects."""


def _plain_capabilities(capabilities: Any) -> bool:
    """Client capabilities the SDK takes as they are (else it answers -32602, so the front leaves
    the request to it): each capability it knows an object (``roots`` with at most a boolean
    ``listChanged``; ``elicitation``'s and ``sampling``'s members, ``experimental``'s and
    ``extensions``' entries objects too). A capability it does not know it ignores."""
    if not isinstance(capabilities, dict):
        return False
    for name, value in capabilities.items():
        if name not in {"roots", "experimental", "extensions", *_CAPABILITY_PARTS}:
            continue
        if not isinstance(value, dict):
            return False
        if name == "roots" and not isinstance(value.get("listChanged", False), bool):
            return False
        if name in {"experimental", "extensions"}:
            parts: Any = value.values()
        else:
            parts = [value[k] for k in _CAPABILITY_PARTS.get(name, ()) if k in value]
        if not all(isinstance(part, dict) for part in parts):
            return False
    return True


def _implementation(info: Any) -> bool:
    return (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
        and set(info) <= {"name", "version", *_IMPLEMENTATION_TEXT}
        and all(isinstance(info[k], str) for k in _IMPLEMENTATION_TEXT if k in info)
    )


def _plain_id(ident: Any) -> bool:
    return isinstance(ident, int | str) and not isinstance(ident, bool)


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return None
    return message if isinstance(message, dict) else None


def _key(ident: Any) -> str:
    return json.dumps(ident)


def _dump(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))
