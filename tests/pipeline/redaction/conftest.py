from __future__ import annotations

import pytest

from pipeline.redaction import Redactor

KEY = bytes(range(32))


@pytest.fixture(scope="session")
def redactor() -> Redactor:
    return Redactor(KEY)
