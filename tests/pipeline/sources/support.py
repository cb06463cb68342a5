"""Helpers for the transcript adapter tests: paths into tests/fixtures/transcripts and a parse helper."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.sources.base import ParseResult
from pipeline.sources.registry import adapter_for
from pipeline.transcript import Transcript
from tests.source_names import SourceName

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude_code" / "projects"
CODEX = FIXTURES / "codex"
GEMINI = FIXTURES / "gemini_cli"
PI = FIXTURES / "pi" / "sessions"
HOSTILE = FIXTURES / "hostile"

SHOP_SID = "0b5c7d7e-2f1a-4c3e-9d41-7a2b9e0c1f11"
CLAUDE_MAIN = CLAUDE / "-home-dev-shop" / f"{SHOP_SID}.jsonl"
CODEX_MAIN = (
    CODEX / "sessions/2026/10/02/rollout-2026-10-02T09-14-03-019a0b1c-2d3e-7f40-8a51-b2c3d4e5f601.jsonl"
)
GEMINI_MAIN = GEMINI / "tmp/shop/chats/session-2026-10-05T08-00-6c1d2e3f.jsonl"
PI_MAIN = PI / "--home-dev-shop--/2026-10-06T10-00-00-000Z_0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl"


def parse(source: SourceName, path: Path, **kwargs: object) -> ParseResult:
    result = adapter_for(source).parse(path, **kwargs)  # type: ignore[arg-type]
    json.dumps(result.state)  # the state is always plain JSON
    return result


def transcript(source: SourceName, path: Path) -> Transcript:
    result = parse(source, path)
    assert result.problem is None, result.problem
    assert result.transcript is not None
    return result.transcript
