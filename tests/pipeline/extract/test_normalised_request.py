"""What phase 1 sends is the text the redactor checked (issue 24): colour codes and zero-width
characters in a tool result neither reach the model nor split a secret from its name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.clock import FakeClock
from pipeline.extract.run import run_phase1
from pipeline.redaction import Redactor
from pipeline.store import Store
from pipeline.transcript import ToolResult
from tests.fakes import anthropic_api as fa
from tests.pipeline.extract.support import (
    T0,
    FakeLoader,
    add_transcript,
    conversation,
    extract_output,
    make_settings,
)

PASSWORD = "Zq8#wXb4!pL2"


async def test_the_request_holds_the_normalised_redacted_text(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    settings = make_settings(tmp_path, fake_api.base_url)
    loader = FakeLoader()
    grep = (
        "config/app.env:3:\x1b[01;31m\x1b[KDB_PASSWORD\x1b[m\x1b[K="
        f"{PASSWORD[:4]}\u200b{PASSWORD[4:]}\n\x1b]8;;file:///x\x07link\x1b]8;;\x07"
    )
    loader.files["/t/s0.jsonl"] = [*conversation(1), ToolResult("c9", grep, False, T0)]
    await add_transcript(store, now=clock.now(), path="/t/s0.jsonl", session_id="sess-0")
    fake_api.responder = fa.ScriptedResponder([fa.json_message(extract_output())])

    report = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), Redactor(bytes(range(32))), load=loader
    )

    assert report.extracted == 1
    [req] = fake_api.message_requests()
    sent = json.dumps(req.json, ensure_ascii=False)
    assert PASSWORD not in sent
    assert PASSWORD[4:] not in sent
    assert "\\u001b" not in sent
    assert "\u200b" not in sent
    assert "DB_PASSWORD=[REDACTED:password:" in sent
