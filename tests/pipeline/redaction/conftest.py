from __future__ import annotations

import zlib

import pytest

from pipeline.redaction import Redactor
from tests.pipeline.redaction import secret_fakes

KEY = bytes(range(32))


@pytest.fixture(scope="session")
def redactor() -> Redactor:
    return Redactor(KEY)


@pytest.fixture(autouse=True)
def _seed_fakes(request: pytest.FixtureRequest) -> None:
    """Each test draws its fake secrets from a generator seeded by its own id: what it sees does
    not depend on which tests ran before it (CI once drew a token the rules missed that a local
    run never drew; that token is now a pinned example in test_rules_context.py)."""
    secret_fakes.reseed(zlib.crc32(request.node.nodeid.encode()))
