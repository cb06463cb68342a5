from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pipeline.transcript import (
    MEMD_SESSION_MARKER,
    OPT_OUT_MARKER,
    ParseErrors,
    Transcript,
    UserMessage,
)


def test_the_markers_we_own() -> None:
    assert MEMD_SESSION_MARKER == "<memd:consolidation>"
    assert OPT_OUT_MARKER == "memd:ignore"


def test_a_transcript_is_immutable_and_its_summary_drops_only_the_items() -> None:
    t = Transcript(
        source="pi",
        path=Path("/s.jsonl"),
        session_id="s",
        cwd=None,
        started_at=None,
        last_activity=None,
        user_message_count=1,
        items=(UserMessage("hi"),),
        items_complete=True,
        external_context=("web_search",),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.user_message_count = 2  # type: ignore[misc]
    summary = t.summary()
    assert summary.items == ()
    assert not summary.items_complete
    assert dataclasses.replace(summary, items=t.items, items_complete=True) == t
    assert t.parse_errors == ParseErrors(0, None)
