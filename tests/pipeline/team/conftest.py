"""Fixtures of the team tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.anthropic_api import FakeAnthropicAPI


@pytest.fixture
async def second_api() -> AsyncIterator[FakeAnthropicAPI]:
    """A second machine's own fake Messages API (each machine pays its own model calls)."""
    api = FakeAnthropicAPI().start()
    try:
        yield api
    finally:
        api.stop()
