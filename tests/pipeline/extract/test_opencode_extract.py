"""An OpenCode session through phase 1 with the real client against the loopback fake of the
Messages API: scanned from the database, extracted with its secret redacted, and extracted again
for the turns its user added later (only those)."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

from pipeline.clock import FakeClock
from pipeline.extract.run import run_phase1
from pipeline.redaction import Redactor
from pipeline.scan.scanner import scan
from pipeline.store import Store, stage1
from tests.conftest import sqlite_only
from tests.fakes import anthropic_api as fa
from tests.pipeline.extract.support import extract_output, make_settings, transcript_state
from tests.pipeline.sources.opencode_support import SECRET, new_session, sample_db, user_message

pytestmark = sqlite_only  # behaviour above the store (tests/conftest.py)


def _ms(clock: FakeClock, ago: timedelta) -> int:
    return int((clock.now() - ago).timestamp() * 1000)


async def test_an_opencode_session_is_extracted_then_only_its_new_turns(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    settings = make_settings(tmp_path, fake_api.base_url)
    db = sample_db(settings.sources.opencode.root)
    with sqlite3.connect(db) as conn:
        new_session(conn, "ses_work", str(tmp_path), _ms(clock, timedelta(hours=9)), turns=2)
        user_message(
            conn, "ses_work", 3, f"deploy with token {SECRET} please", _ms(clock, timedelta(hours=8))
        )
    conn.close()
    redactor = Redactor(b"opencode-extract-key-0123456789")
    await scan(store, settings, clock)
    fake_api.responder = fa.ScriptedResponder([fa.json_message(extract_output())] * 2)

    report = await run_phase1(store, settings, clock, llm_factory(settings, store, clock), redactor)

    assert report.extracted == 1
    [request] = fake_api.message_requests()
    text = json.dumps(request.json["messages"])
    assert "request 0 in ses_work" in text
    assert "deploy with token" in text
    assert SECRET not in text
    [session] = [s for s in (await scan(store, settings, clock)).sessions if s.session_id == "ses_work"]
    assert session.state == "extracted"

    with sqlite3.connect(db) as conn:
        user_message(conn, "ses_work", 4, "now also fix the flaky test", _ms(clock, timedelta(hours=7)))
    conn.close()
    await scan(store, settings, clock)
    again = await run_phase1(store, settings, clock, llm_factory(settings, store, clock), redactor)
    assert again.extracted == 1
    second = json.dumps(fake_api.message_requests()[1].json["messages"])
    assert "now also fix the flaky test" in second
    assert "request 0 in ses_work" not in second, "only what came after the previous extract"
    outputs = await stage1.outputs_for(store, session.id)
    assert len(outputs) == 2
    assert (await transcript_state(store, session.id))[0] == "extracted"
