"""A loopback fake of the Anthropic Messages API, for driving the real ``anthropic`` client in tests.

``FakeAnthropicAPI`` is a Starlette app served by uvicorn on ``127.0.0.1:<free port>`` in a
background thread (``start()`` waits on an event with a timeout; no sleeps). It records every
request (``.requests``: method, path, headers, JSON body) and answers ``POST /v1/messages`` with
whatever ``.responder(body, headers) -> FakeResponse`` returns. It also serves
``/v1/messages/count_tokens`` and the Message Batches endpoints (create, retrieve, list, cancel,
results as JSONL), whose entries are answered by the same responder when the batch ends.

Builders for the usual answers: ``message`` / ``json_message`` / ``tool_use_message`` (200 with
usage), ``rate_limited`` (429 + ``retry-after``), ``overloaded`` (529), ``server_error``,
``bad_request`` (400), ``malformed`` (200 whose text is not the JSON asked for), and
``ratelimit_headers`` for the ``anthropic-ratelimit-*`` family. ``ScriptedResponder([...])`` pops
responses in order, for multi-turn (tool use) conversations.

Authentication: ``Authorization: Bearer <key>`` (what the SDK sends) or ``x-api-key``; set
``.expected_key`` to refuse any other key with a 401.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

STARTUP_TIMEOUT_S = 10.0


@dataclass
class FakeResponse:
    status: int = 200
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def body(self) -> Any:
        return self.json


Responder = Callable[[dict[str, Any], dict[str, str]], FakeResponse]


# ---------------------------------------------------------------- response builders


def usage(
    input_tokens: int = 100, output_tokens: int = 50, *, cache_read: int = 0, cache_write: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


_ids = iter(range(1, 1 << 62))


def message(
    content: str | list[dict[str, Any]] = "ok",
    *,
    model: str = "claude-haiku-5-5",
    stop_reason: str = "end_turn",
    usage_: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> FakeResponse:
    """A 200 Messages response. ``content`` is text, or a list of content blocks."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    body = {
        "id": f"msg_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage_ or usage(),
    }
    return FakeResponse(200, body, dict(headers or {}))


def json_message(obj: Any, **kw: Any) -> FakeResponse:
    """A 200 response whose text is ``obj`` as JSON (what structured output returns)."""
    return message(json.dumps(obj), **kw)


def tool_use(name: str, input_: dict[str, Any], *, id_: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_ or f"toolu_{next(_ids):06d}", "name": name, "input": input_}


def tool_use_message(*blocks: dict[str, Any], text: str | None = None, **kw: Any) -> FakeResponse:
    content = ([{"type": "text", "text": text}] if text else []) + list(blocks)
    return message(content, stop_reason="tool_use", **kw)


def malformed(text: str = "Sure! Here is the JSON you asked for: {not json", **kw: Any) -> FakeResponse:
    return message(text, **kw)


def error(status: int, kind: str, msg: str, headers: dict[str, str] | None = None) -> FakeResponse:
    body = {"type": "error", "error": {"type": kind, "message": msg}}
    return FakeResponse(status, body, dict(headers or {}))


def rate_limited(retry_after_s: float | None = 30, *, headers: dict[str, str] | None = None) -> FakeResponse:
    h = dict(headers or {})
    if retry_after_s is not None:
        h["retry-after"] = (
            str(int(retry_after_s)) if float(retry_after_s).is_integer() else str(retry_after_s)
        )
    return error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.", h)


def overloaded(headers: dict[str, str] | None = None) -> FakeResponse:
    return error(529, "overloaded_error", "Overloaded", headers)


def server_error(status: int = 500, headers: dict[str, str] | None = None) -> FakeResponse:
    return error(status, "api_error", "Internal server error", headers)


def bad_request(msg: str = "messages: prompt is too long", status: int = 400) -> FakeResponse:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
    }
    return error(status, kind.get(status, "invalid_request_error"), msg)


def ratelimit_headers(
    *,
    requests: tuple[int, int] = (50, 49),
    input_tokens: tuple[int, int] = (100_000, 99_000),
    output_tokens: tuple[int, int] = (20_000, 19_900),
    reset: datetime | None = None,
) -> dict[str, str]:
    """``anthropic-ratelimit-{requests,input-tokens,output-tokens}-{limit,remaining,reset}`` headers.

    Each family is given as ``(limit, remaining)``; all share ``reset`` (RFC 3339, default in a minute).
    """
    at = (
        (reset or datetime.now(UTC) + timedelta(minutes=1)).astimezone(UTC).isoformat().replace("+00:00", "Z")
    )
    out: dict[str, str] = {}
    for family, (limit, remaining) in (
        ("requests", requests),
        ("input-tokens", input_tokens),
        ("output-tokens", output_tokens),
    ):
        out[f"anthropic-ratelimit-{family}-limit"] = str(limit)
        out[f"anthropic-ratelimit-{family}-remaining"] = str(remaining)
        out[f"anthropic-ratelimit-{family}-reset"] = at
    return out


class ScriptedResponder:
    """Answers with ``script`` in order (a ``FakeResponse`` or a responder callable per turn).

    Records each ``(body, headers)`` it was called with in ``.calls``. Once the script is used up it
    answers 500 with "script exhausted" (and sets ``.exhausted``), so a test sees the overrun.
    """

    def __init__(self, script: Iterable[FakeResponse | Responder]) -> None:
        self.script = list(script)
        self.calls: list[tuple[dict[str, Any], dict[str, str]]] = []
        self.exhausted = False
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        with self._lock:
            self.calls.append((body, headers))
            if not self.script:
                self.exhausted = True
                return error(500, "api_error", "script exhausted")
            step = self.script.pop(0)
        return step if isinstance(step, FakeResponse) else step(body, headers)

    @property
    def remaining(self) -> int:
        return len(self.script)


def default_responder(_body: dict[str, Any], _headers: dict[str, str]) -> FakeResponse:
    return message("ok")


# ---------------------------------------------------------------- batches


@dataclass
class FakeBatch:
    id: str
    requests: list[dict[str, Any]]
    created_at: datetime
    status: str = "in_progress"  # in_progress | canceling | ended
    ended_at: datetime | None = None
    results: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        c = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if self.status != "ended":
            c["processing"] = len(self.requests)
        for r in self.results:
            c[r["result"]["type"]] += 1
        return c

    def to_json(self, base_url: str) -> dict[str, Any]:
        def iso(d: datetime | None) -> str | None:
            return None if d is None else d.isoformat().replace("+00:00", "Z")

        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status,
            "request_counts": self.counts(),
            "created_at": iso(self.created_at),
            "ended_at": iso(self.ended_at),
            "expires_at": iso(self.created_at + timedelta(hours=24)),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{base_url}/v1/messages/batches/{self.id}/results"
            if self.status == "ended"
            else None,
        }


def succeeded(resp: FakeResponse) -> dict[str, Any]:
    return {"type": "succeeded", "message": resp.json}


def errored(msg: str = "Internal server error", kind: str = "api_error") -> dict[str, Any]:
    return {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": msg}}}


def expired() -> dict[str, Any]:
    return {"type": "expired"}


# ---------------------------------------------------------------- the app


class FakeAnthropicAPI:
    """The fake API. ``start()`` serves it on loopback; ``base_url`` is then ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.responder: Responder = default_responder
        self.default_headers: dict[str, str] = {}
        self.expected_key: str | None = None
        self.auto_end_batches = True
        self.batches: dict[str, FakeBatch] = {}
        self.interceptor: Callable[[RecordedRequest], FakeResponse | None] | None = None
        self.count_tokens: Callable[[dict[str, Any]], int] = lambda body: max(1, len(json.dumps(body)) // 4)
        self.base_url = ""
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/messages/batches", self._batch_create, methods=["POST"]),
                Route("/v1/messages/batches", self._batch_list, methods=["GET"]),
                Route("/v1/messages/batches/{id}", self._batch_retrieve, methods=["GET"]),
                Route("/v1/messages/batches/{id}/cancel", self._batch_cancel, methods=["POST"]),
                Route("/v1/messages/batches/{id}/results", self._batch_results, methods=["GET"]),
            ]
        )

    # -- inspection helpers

    def message_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/messages`` requests, in order."""
        return [r for r in self.requests if r.path == "/v1/messages" and r.method == "POST"]

    def paths(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.requests]

    # -- batches, driven by the test

    def end_batch(self, batch_id: str, overrides: dict[str, dict[str, Any]] | None = None) -> FakeBatch:
        """End a batch: each entry answered by the responder unless ``overrides[custom_id]`` says otherwise
        (``succeeded(resp)``, ``errored()``, ``expired()``)."""
        batch = self.batches[batch_id]
        results = []
        for req in batch.requests:
            cid = req["custom_id"]
            if overrides and cid in overrides:
                result = overrides[cid]
            else:
                resp = self.responder(req["params"], {})
                result = succeeded(resp) if resp.status == 200 else {"type": "errored", "error": resp.json}
            results.append({"custom_id": cid, "result": result})
        batch.results = results
        batch.status = "ended"
        batch.ended_at = datetime.now(UTC)
        return batch

    # -- serving

    def start(self) -> FakeAnthropicAPI:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        port = sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        ready = threading.Event()
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False)
        server = _Server(config, ready)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="fake-api"
        )
        self._thread.start()
        if not ready.wait(STARTUP_TIMEOUT_S):
            raise RuntimeError("the fake Anthropic API did not start")
        self._sock = sock
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        if self._thread is not None:
            self._thread.join(STARTUP_TIMEOUT_S)
        if getattr(self, "_sock", None) is not None:
            self._sock.close()

    # -- handlers

    async def _record(self, request: Request) -> tuple[RecordedRequest, FakeResponse | None]:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in request.headers.items()}
        rec = RecordedRequest(request.method, request.url.path, headers, body)
        with self._lock:
            self.requests.append(rec)
        auth = _key_from(headers)
        if auth is None:
            return rec, bad_request("x-api-key or Authorization header is required", 401)
        if self.expected_key is not None and auth != self.expected_key:
            return rec, bad_request("invalid x-api-key", 401)
        if self.interceptor is not None:
            return rec, self.interceptor(rec)
        return rec, None

    def _send(self, resp: FakeResponse) -> Response:
        headers = {**self.default_headers, "request-id": f"req_{next(_ids):06d}", **resp.headers}
        return JSONResponse(resp.json, status_code=resp.status, headers=headers)

    async def _messages(self, request: Request) -> Response:
        rec, early = await self._record(request)
        if early is not None:
            return self._send(early)
        return self._send(self.responder(rec.json, rec.headers))

    async def _count_tokens(self, request: Request) -> Response:
        rec, early = await self._record(request)
        if early is not None:
            return self._send(early)
        return self._send(FakeResponse(200, {"input_tokens": self.count_tokens(rec.json)}))

    async def _batch_create(self, request: Request) -> Response:
        rec, early = await self._record(request)
        if early is not None:
            return self._send(early)
        batch = FakeBatch(f"msgbatch_{next(_ids):06d}", list(rec.json["requests"]), datetime.now(UTC))
        self.batches[batch.id] = batch
        if self.auto_end_batches:
            self.end_batch(batch.id)
        return self._send(FakeResponse(200, batch.to_json(self.base_url)))

    async def _batch_list(self, request: Request) -> Response:
        rec, early = await self._record(request)
        if early is not None:
            return self._send(early)
        data = [b.to_json(self.base_url) for b in reversed(self.batches.values())]
        first = data[0]["id"] if data else None
        last = data[-1]["id"] if data else None
        return self._send(
            FakeResponse(200, {"data": data, "has_more": False, "first_id": first, "last_id": last})
        )

    async def _batch_retrieve(self, request: Request) -> Response:
        rec, early = await self._record(request)
        if early is not None:
            return self._send(early)
        batch = self.batches.get(request.path_params["id"])
        if batch is None:
            return self._send(bad_request("batch not found", 404))
        return self._send(FakeResponse(200, batch.to_json(self.base_url)))

    async def _batch_cancel(self, request: Request) -> Response:
        rec, early = await self._record(request)
        if early is not None:
            return self._send(early)
        batch = self.batches.get(request.path_params["id"])
        if batch is None:
            return self._send(bad_request("batch not found", 404))
        if batch.status != "ended":
            self.end_batch(batch.id, {r["custom_id"]: {"type": "canceled"} for r in batch.requests})
        return self._send(FakeResponse(200, batch.to_json(self.base_url)))

    async def _batch_results(self, request: Request) -> Response:
        rec, early = await self._record(request)
        if early is not None:
            return self._send(early)
        batch = self.batches.get(request.path_params["id"])
        if batch is None or batch.status != "ended":
            return self._send(bad_request("batch results not ready", 404))
        lines = "".join(json.dumps(r) + "\n" for r in batch.results)
        headers = {**self.default_headers, "request-id": f"req_{next(_ids):06d}"}
        return Response(lines, media_type="application/binary", headers=headers)


def _key_from(headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer ") and auth[7:].strip():
        return auth[7:].strip()
    return headers.get("x-api-key") or None


class _Server(uvicorn.Server):
    """uvicorn's server, told to stop by an event rather than by the flag its loop looks at every 0.1 s."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._ready.set()

    async def main_loop(self) -> None:
        assert self._stopping is not None
        await self.on_tick(0)  # the default headers (a fake keeps the Date of its start)
        await self._stopping.wait()

    def stop(self) -> None:
        self.should_exit = True
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
