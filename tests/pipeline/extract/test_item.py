"""Phase 1's load of one transcript (``pipeline.extract.item``): a hostile file swapped in after the
scan, bytes written after the scan, and a file read again from its start."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from pipeline.clock import FakeClock
from pipeline.extract.run import run_phase1
from pipeline.store import Store, stage1
from pipeline.store import jobs as jobs_
from pipeline.store.schema import transcripts
from pipeline.transcript import AssistantText, UserMessage
from tests.conftest import sqlite_only
from tests.fakes import anthropic_api as fa
from tests.pipeline.extract.support import (
    T0,
    FakeLoader,
    TagRedactor,
    add_transcript,
    conversation,
    extract_output,
    make_settings,
    transcript_state,
)

pytestmark = sqlite_only  # behaviour above the store (tests/conftest.py)

SID = "4d5611e5-241a-462a-8d15-5122611a9569"


def _turn(n: int, text: str) -> bytes:
    at = (T0 + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    records = [
        {
            "type": "user",
            "sessionId": SID,
            "cwd": "/home/u/proj",
            "uuid": f"u{n}",
            "timestamp": at,
            "message": {"role": "user", "content": text},
        },
        {
            "type": "assistant",
            "sessionId": SID,
            "cwd": "/home/u/proj",
            "uuid": f"a{n}",
            "timestamp": at,
            "message": {"id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": "done"}]},
        },
    ]
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


async def _scanned(store: Store, clock: FakeClock, path: Path) -> int:
    """A transcript row as a scan leaves it: the path, and the size its stat saw."""
    tid = await add_transcript(store, now=clock.now(), path=str(path), session_id=SID)
    async with store.write() as conn:
        await conn.execute(
            update(transcripts).where(transcripts.c.id == tid).values(size=path.stat().st_size)
        )
    return tid


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
async def test_a_transcript_swapped_for_a_fifo_or_dev_zero_after_the_scan_is_unreadable(
    tmp_path: Path,
    store: Store,
    clock: FakeClock,
    fake_api: fa.FakeAnthropicAPI,
    llm_factory: Any,
    kind: str,
) -> None:
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(_turn(1, "please fix the login test") + _turn(2, "and the signup test"))
    settings = make_settings(tmp_path, fake_api.base_url)
    tid = await _scanned(store, clock, path)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")

    # a FIFO opened for reading would block until a writer comes, /dev/zero would read for ever: the
    # test's timeout is what catches either (no timed assertion: a loaded machine is not a defect)
    report = await run_phase1(store, settings, clock, llm_factory(settings, store, clock), TagRedactor())

    assert fake_api.requests == []
    assert report.failed == 1
    reason = "not a regular file (a FIFO)" if kind == "fifo" else "not a regular file (a character device)"
    assert await transcript_state(store, tid) == ("unreadable", reason, 0)


async def test_bytes_written_after_the_scan_wait_for_the_next_scan(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(_turn(1, "please fix the login test") + _turn(2, "and the signup test"))
    settings = make_settings(tmp_path, fake_api.base_url)
    tid = await _scanned(store, clock, path)
    scanned = path.stat().st_size
    with path.open("ab") as f:
        f.write(_turn(3, "written after the scan"))
    fake_api.responder = fa.ScriptedResponder([fa.json_message(extract_output())])

    report = await run_phase1(store, settings, clock, llm_factory(settings, store, clock), TagRedactor())

    assert report.extracted == 1
    user = fake_api.message_requests()[0].json["messages"][0]["content"]
    assert "and the signup test" in user
    assert "written after the scan" not in user
    [row] = await stage1.outputs_for(store, tid)
    assert row.range_end == scanned


async def test_the_default_loader_passes_the_scanned_size_down(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    settings = make_settings(tmp_path, fake_api.base_url)
    loader = FakeLoader()
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(_turn(1, "please fix the login test"))
    loader.files[str(path)] = conversation(2)
    await _scanned(store, clock, path)
    await run_phase1(store, settings, clock, None, TagRedactor(), dry_run=True, load=loader)
    assert loader.max_bytes == [path.stat().st_size]


async def test_a_transcript_read_again_from_its_start_is_extracted_whole(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    settings = make_settings(tmp_path, fake_api.base_url)
    llm = llm_factory(settings, store, clock)
    loader = FakeLoader()
    loader.files["/t/s.jsonl"] = conversation(2)
    tid = await add_transcript(store, now=clock.now())
    first = extract_output(rollout_summary="FIRST SUMMARY: the old file.")
    fake_api.responder = fa.ScriptedResponder([fa.json_message(first), fa.json_message(extract_output())])
    await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)

    # The file was replaced by a longer, different one: the scan read it from byte 0 and reset
    # the extract offset (pipeline.scan.scanner).
    replaced = [UserMessage(f"new turn {i}: migrate the database") for i in range(6)]
    replaced += [AssistantText(f"migrated step {i}") for i in range(6)]
    replaced.append(UserMessage("and now the last step"))
    loader.files["/t/s.jsonl"] = replaced
    async with store.write() as conn:
        await conn.execute(
            update(transcripts).where(transcripts.c.id == tid).values(state="eligible", extracted_offset=0)
        )
    clock.advance(timedelta(hours=8))
    await jobs_.enqueue(store, "extract", str(tid), now=clock.now())
    report = await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)

    assert report.extracted == 1
    user = fake_api.message_requests()[1].json["messages"][0]["content"]
    assert "the whole session (13 items)" in user
    assert "new turn 0: migrate the database" in user
    assert "FIRST SUMMARY" not in user  # the old file's summary says nothing of this one
    old, new = await stage1.outputs_for(store, tid)
    assert old.superseded_by == new.id
    assert (new.items_start, new.items_end, new.range_start, new.range_end) == (0, 13, 0, 13000)
    assert await transcript_state(store, tid) == ("extracted", None, 13000)
