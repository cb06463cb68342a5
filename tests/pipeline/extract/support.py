"""Shared builders for the phase-1 and LLM client tests (not a test module)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from pipeline.machine import UNNAMED
from pipeline.settings import Settings, default_values
from pipeline.sources.base import ParseResult
from pipeline.store import Store
from pipeline.store import jobs as jobs_
from pipeline.store.schema import jobs, transcripts
from pipeline.transcript import AssistantText, ErrorItem, Item, ToolCall, ToolResult, Transcript, UserMessage

T0 = datetime.fromisoformat("2026-10-30T09:00:00+00:00")


def make_settings(
    tmp_path: Path, base_url: str = "http://127.0.0.1:9", **sections: dict[str, Any]
) -> Settings:
    values = default_values({"HOME": str(tmp_path)})
    values["llm"] = {"base_url": base_url, "batch": "off", **sections.pop("llm", {})}
    values.update(sections)
    return Settings.model_validate(values)


class TagRedactor:
    """A deterministic stand-in for pipeline.redaction.Redactor: ``SECRET-<alnum>`` -> a placeholder."""

    PATTERN = re.compile(r"SECRET-[A-Za-z0-9]+")

    def __init__(self) -> None:
        self.calls = 0

    @dataclass(frozen=True)
    class Result:
        text: str
        counts: dict[str, int] = field(default_factory=dict)

    def redact(self, text: str) -> TagRedactor.Result:
        self.calls += 1
        counts: Counter[str] = Counter()

        def sub(_m: re.Match[str]) -> str:
            counts["test-secret"] += 1
            return "[REDACTED:test-secret]"

        return TagRedactor.Result(self.PATTERN.sub(sub, text), dict(counts))


def conversation(n_turns: int = 2, *, start: datetime = T0, secret: str | None = None) -> list[Item]:
    items: list[Item] = []
    for i in range(n_turns):
        at = start + timedelta(minutes=10 * i)
        text = f"user turn {i}: please fix the flaky login test"
        if secret and i == 0:
            text += f" (the token is {secret})"
        items += [
            UserMessage(text, at),
            AssistantText(f"assistant turn {i}: looking at tests/login_test.py", at),
            ToolCall("Bash", "pytest tests/login_test.py -x", '{"command": "pytest"}', f"c{i}", at),
            ToolResult(f"c{i}", "1 failed, 3 passed\nAssertionError: expected 200", False, at),
        ]
    items.append(ErrorItem("API Error: overloaded", start))
    return items


def transcript_of(items: list[Item], *, path: str = "/t/s.jsonl", session_id: str = "sess-1") -> Transcript:
    stamps = [getattr(i, "timestamp", None) for i in items if getattr(i, "timestamp", None)]
    return Transcript(
        source="claude_code",
        path=Path(path),
        session_id=session_id,
        cwd="/home/u/proj",
        started_at=min(stamps) if stamps else None,
        last_activity=max(stamps) if stamps else None,
        user_message_count=sum(isinstance(i, UserMessage) for i in items),
        items=tuple(items),
        items_complete=True,
    )


class FakeLoader:
    """``load(source, path, max_bytes)`` from a dict path -> items (or a ParseResult), counting
    calls and the byte caps it was given."""

    def __init__(self) -> None:
        self.files: dict[str, list[Item] | ParseResult] = {}
        self.calls: list[str] = []
        self.max_bytes: list[int | None] = []

    def __call__(self, source: str, path: Path, max_bytes: int | None = None) -> ParseResult:
        self.calls.append(str(path))
        self.max_bytes.append(max_bytes)
        value = self.files[str(path)]
        if isinstance(value, ParseResult):
            return value
        size = 1000 * len(value)
        return ParseResult(transcript_of(value, path=str(path)), size, {})


async def add_transcript(
    store: Store,
    *,
    now: datetime,
    path: str = "/t/s.jsonl",
    session_id: str = "sess-1",
    project: str | None = "/home/u/proj",
    enqueue: bool = True,
) -> int:
    async with store.write() as conn:
        tid = (
            await conn.execute(
                insert(transcripts)
                .values(
                    machine=UNNAMED,
                    source="claude_code",
                    path=path,
                    session_id=session_id,
                    cwd=project,
                    project=project,
                    state="eligible",
                    first_seen_at=now,
                    updated_at=now,
                    parsed_offset=0,
                    extracted_offset=0,
                    user_messages=1,
                    changed_in_scan=0,
                )
                .returning(transcripts.c.id)
            )
        ).scalar_one()
    if enqueue:
        await jobs_.enqueue(store, "extract", str(tid), now=now)
    return int(tid)


async def transcript_state(store: Store, tid: int) -> tuple[str, str | None, int]:
    async with store.read() as conn:
        row = (
            await conn.execute(
                select(transcripts.c.state, transcripts.c.reason, transcripts.c.extracted_offset).where(
                    transcripts.c.id == tid
                )
            )
        ).one()
    return row[0], row[1], int(row[2])


async def job_row(store: Store, key: str) -> Any:
    async with store.read() as conn:
        return (await conn.execute(select(jobs).where(jobs.c.kind == "extract", jobs.c.key == key))).one()


def extract_output(**overrides: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rollout_summary": "Fixed the flaky login test by waiting for the session cookie.",
        "raw_memory": "- Run the login tests with `pytest tests/login_test.py -x`.",
        "rollout_slug": "Fix Flaky Login Test",
        "memories": [
            {
                "type": "feedback",
                "name": "Run one failing test first",
                "description": "How the user wants test failures chased.",
                "body": "Run the single failing test with -x before the whole suite.",
                "why": "The full suite takes 20 minutes.",
                "how_to_apply": "When a test fails, rerun only it first.",
                "dates": ["2026-10-30"],
                "evidence": "user",
                "evidence_quote": "user turn 0",
            }
        ],
    }
    out.update(overrides)
    return out
