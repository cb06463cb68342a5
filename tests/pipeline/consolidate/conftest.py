"""Fixtures for phase 2: settings in tmp_path, the real client against the fake API, extracts in the store."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.llm.client import build_client
from pipeline.redaction import Redactor
from pipeline.store import Store
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, make_settings


@pytest.fixture
async def env(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: FakeAnthropicAPI
) -> AsyncIterator[Env]:
    settings = make_settings(tmp_path, fake_api.base_url)
    llm = build_client(
        settings, store=store, clock=clock, env={"ANTHROPIC_API_KEY": FAKE_API_KEY}, rng=random.Random(1)
    )
    try:
        yield Env(tmp_path, store, clock, fake_api, settings, llm, Redactor(b"phase2-test-key-0123456789"))
    finally:
        await llm.aclose()
