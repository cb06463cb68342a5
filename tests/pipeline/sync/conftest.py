"""Fixtures of the sync tests: two machines on one remote (``support.two_machines``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sync.support import Machine, two_machines


@pytest.fixture
async def pair(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> AsyncIterator[tuple[Machine, Machine]]:
    """Machines ``a`` and ``b`` over ``git daemon``, ``b`` trusted by ``a``."""
    async with two_machines(tmp_path, fake_api, clock) as machines:
        yield machines
