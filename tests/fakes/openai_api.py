"""A loopback fake of an OpenAI-compatible Chat Completions server, for driving the real ``openai`` client.

``FakeOpenAIAPI`` serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on ``127.0.0.1:<free
port>`` (uvicorn in a thread, like ``tests.fakes.anthropic_api``), records every request, and
answers chat requests with ``.responder(body) -> FakeResponse``. ``.json_schema = False`` makes it
behave as llama-cpp-python's server does with ``response_format`` json_schema: HTTP 500 naming
``response_format``; ``.null_content_500 = True`` refuses an assistant turn whose content is null,
as it does too. Builders: ``chat`` (text), ``tool_calls`` (function calls, ``finish_reason`` given).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.anthropic_api import STARTUP_TIMEOUT_S, FakeResponse, RecordedRequest, _Server

_ids = iter(range(1, 1 << 62))


def chat(
    content: str | None,
    *,
    finish: str = "stop",
    prompt: int = 120,
    completion: int = 40,
    model: str = "qwen3:8b",
) -> FakeResponse:
    return FakeResponse(
        200,
        {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        },
    )


def tool_calls(
    calls: Iterable[tuple[str, Any]],
    *,
    finish: str = "tool_calls",
    content: str | None = None,
    model: str = "qwen3:8b",
) -> FakeResponse:
    """``calls``: ``(name, arguments)``; arguments given as a dict are sent as JSON, a str as it is."""
    resp = chat(content, finish=finish, model=model)
    resp.json["choices"][0]["message"]["tool_calls"] = [
        {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
        }
        for name, args in calls
    ]
    return resp


def error(status: int, message: str) -> FakeResponse:
    return FakeResponse(status, {"error": {"message": message, "type": "invalid_request_error"}})


class Scripted:
    """Answers with ``script`` in order; 500 "script exhausted" after (``.exhausted`` set)."""

    def __init__(self, script: Iterable[FakeResponse | Callable[[dict[str, Any]], FakeResponse]]) -> None:
        self.script = list(script)
        self.exhausted = False

    def __call__(self, body: dict[str, Any]) -> FakeResponse:
        if not self.script:
            self.exhausted = True
            return error(500, "script exhausted")
        step = self.script.pop(0)
        return step if isinstance(step, FakeResponse) else step(body)


class FakeOpenAIAPI:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[dict[str, Any]], FakeResponse] = lambda body: chat("ok")
        self.models = ["qwen3:8b", "qwen3:32b"]
        self.json_schema = True
        self.null_content_500 = True
        self.base_url = ""
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.json for r in self.requests if r.path == "/v1/chat/completions"]

    def start(self) -> FakeOpenAIAPI:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        ready = threading.Event()
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False)
        self._server = _Server(config, ready)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        if not ready.wait(STARTUP_TIMEOUT_S):
            raise RuntimeError("the fake OpenAI API did not start")
        self._sock = sock
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        if self._thread is not None:
            self._thread.join(STARTUP_TIMEOUT_S)
        self._sock.close()

    async def _record(self, request: Request) -> RecordedRequest:
        raw = await request.body()
        body = json.loads(raw) if raw else None
        rec = RecordedRequest(
            request.method, request.url.path, {k.lower(): v for k, v in request.headers.items()}, body
        )
        with self._lock:
            self.requests.append(rec)
        return rec

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse(
            {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "me"} for m in self.models]}
        )

    async def _chat(self, request: Request) -> Response:
        rec = await self._record(request)
        body = rec.json
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema" and not self.json_schema:
            detail = "1 validation error: response_format.type: Input should be 'text' or 'json_object'"
            return JSONResponse(
                {"error": {"message": detail, "type": "internal_server_error"}}, status_code=500
            )
        if self.null_content_500 and any(
            m.get("role") == "assistant" and m.get("content") is None for m in body.get("messages", [])
        ):
            return JSONResponse(
                {"error": {"message": "content: Input should be a valid string"}}, status_code=500
            )
        resp = self.responder(body)
        return JSONResponse(resp.json, status_code=resp.status, headers=resp.headers)
