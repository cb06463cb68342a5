"""Property: a JSONL file appended in arbitrary byte chunks, parsed after each append with the state
the previous parse returned (through JSON, as the scanner stores it), ends with the same transcript
summary and offset as one full parse of the finished file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.sources.registry import adapter_for
from tests.pipeline.sources.support import (
    CLAUDE,
    CLAUDE_MAIN,
    CODEX,
    CODEX_MAIN,
    GEMINI_MAIN,
    HOSTILE,
    PI,
    PI_MAIN,
)
from tests.source_names import SourceName

CASES: list[tuple[SourceName, Path]] = [
    ("claude_code", CLAUDE_MAIN),
    ("claude_code", CLAUDE / "-home-dev-legacy/3f0d9c2e-8b7a-4d6c-9e5f-1a2b3c4d5e6f.jsonl"),
    ("claude_code", HOSTILE / "c0ffee00-0000-4000-8000-00000000dead.jsonl"),
    ("codex", CODEX_MAIN),
    (
        "codex",
        CODEX / "sessions/2026/10/04/rollout-2026-10-04T10-00-00-019a0d00-0000-7000-8000-0000000aa9e0.jsonl",
    ),
    ("codex", CODEX / "sessions/rollout-2025-07-01T10-00-00-0197c000-0000-7000-8000-000000000b0b.jsonl"),
    ("gemini_cli", GEMINI_MAIN),
    ("pi", PI_MAIN),
    ("pi", PI / "--home-dev-old--/2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl"),
]


@pytest.mark.parametrize(("source", "fixture"), CASES, ids=[f"{s}:{p.name[:24]}" for s, p in CASES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_appending_in_chunks_equals_one_full_parse(
    source: SourceName, fixture: Path, data: st.DataObject
) -> None:
    content = fixture.read_bytes()
    cuts = data.draw(st.lists(st.integers(0, len(content)), max_size=12).map(sorted), label="cuts")
    adapter = adapter_for(source)
    with tempfile.TemporaryDirectory() as tmp:
        # the same relative layout, so path-derived facts (sub-agent dirs, project markers) agree
        path = Path(tmp) / fixture.name
        path.write_bytes(b"")
        offset, state = 0, None
        previous = 0
        for cut in [*cuts, len(content)]:
            with path.open("ab") as handle:
                handle.write(content[previous:cut])
            previous = cut
            result = adapter.parse(path, offset, state, with_items=False)
            assert not result.restarted or offset == 0
            assert result.new_offset >= offset
            offset = result.new_offset
            state = json.loads(json.dumps(result.state))
        full = adapter.parse(path)
    assert result.new_offset == full.new_offset
    assert (result.problem is None) == (full.problem is None)
    assert full.transcript is not None
    assert result.transcript is not None
    assert result.transcript == full.transcript.summary()
