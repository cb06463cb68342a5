"""Pytest fixtures for the fakes; registered from tests/conftest.py."""

from __future__ import annotations

import gc
import random
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tests.fakes.anthropic_api import FakeAnthropicAPI

FAKE_API_KEY = "sk-ant-fake-test-key-0000"


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropicAPI]:
    """The fake Messages API on 127.0.0.1:<free port>; point the client at ``fake_api.base_url``."""
    api = FakeAnthropicAPI().start()
    try:
        yield api
    finally:
        api.stop()
        # Collect any SDK client a test left unclosed now, at a safe point: its sockets' ResourceWarning
        # raised later, inside the garbage collection of an ast.parse, trips a CPython 3.11 bug
        # ("SystemError: AST constructor recursion depth mismatch").
        gc.collect()


@pytest.fixture
async def llm_factory() -> AsyncIterator[Callable[..., Any]]:
    """``make(settings, store, clock, **kw) -> LLMClient`` with the fake key; every client is closed after
    the test (an unclosed SDK client left to the garbage collector upsets CPython 3.11's AST checks)."""
    from pipeline.llm.client import build_client

    made: list[Any] = []

    def make(settings: Any, store: Any, clock: Any, **kw: Any) -> Any:
        kw.setdefault("env", {"ANTHROPIC_API_KEY": FAKE_API_KEY})
        kw.setdefault("rng", random.Random(7))
        client = build_client(settings, store=store, clock=clock, **kw)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
