"""memory_remember's backend: the secret gate, the session's rate limit, the scope, the same note twice."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.memory.layout import GLOBAL_SCOPE
from pipeline.notes.caps import TEXT_MAX_CHARS
from pipeline.notes.remember import GLOBAL_HELD, ORIGIN, Here, remember
from pipeline.projects import scope_for
from pipeline.redaction import Redactor
from pipeline.store import Store
from pipeline.store import notes as db
from tests.pipeline.consolidate.support import make_settings

FINDER = Redactor(b"notes-test-key-0123456789abcdef")
HERE = Here("/work/acme", scope_for("/work/acme"))
AWS_KEY = "AKIA" + "QYLPMN5HHHFPZAM2"


def settings(tmp_path: Path) -> int:
    """The rate limit as `memd mcp` reads it: ``[notes] remember_per_hour`` (its default here)."""
    return make_settings(tmp_path, "http://127.0.0.1:9").notes.remember_per_hour


async def test_a_note_waits_for_the_next_consolidation_of_the_project(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    got = await remember(
        store,
        clock,
        FINDER,
        per_hour=settings(tmp_path),
        text="  Deploys go through `make ship`, never by hand.  ",
        reason="the user corrected me",
        here=HERE,
        session="s1",
    )
    assert got.status == "pending"
    assert got.reason is None
    [note] = await db.open_notes(store, HERE.scope)
    assert got.id == f"note-{note.id}"
    assert (note.text, note.reason, note.origin, note.project) == (
        "Deploys go through `make ship`, never by hand.",
        "the user corrected me",
        ORIGIN,
        "/work/acme",
    )
    assert await db.open_notes(store, GLOBAL_SCOPE) == []


async def test_a_note_holding_a_secret_is_refused_naming_the_rule_never_the_value(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    for text, reason in ((f"the deploy key is {AWS_KEY}", None), ("deploy with make ship", f"key {AWS_KEY}")):
        got = await remember(
            store,
            clock,
            FINDER,
            per_hour=settings(tmp_path),
            text=text,
            reason=reason,
            here=HERE,
            session="s1",
        )
        assert got.status == "refused"
        assert got.id is None
        assert got.reason is not None
        assert "aws" in got.reason.lower()
        assert AWS_KEY not in got.reason
    assert await db.open_notes(store, HERE.scope) == []


async def test_each_session_may_hand_memd_so_many_notes_an_hour(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    two = 2  # [notes] remember_per_hour

    async def note(text: str, session: str = "s1") -> str:
        got = await remember(store, clock, FINDER, per_hour=two, text=text, here=HERE, session=session)
        return got.status

    assert [await note("one"), await note("two"), await note("three")] == ["pending", "pending", "refused"]
    assert await note("three", session="s2") == "pending"  # another server, its own limit
    clock.advance(timedelta(minutes=61))
    assert await note("four") == "pending"
    assert len(await db.open_notes(store, HERE.scope)) == 4


async def test_the_same_note_again_is_the_first_one(tmp_path: Path, store: Store, clock: FakeClock) -> None:
    first = await remember(
        store, clock, FINDER, per_hour=settings(tmp_path), text="use uv", here=HERE, session="s1"
    )
    again = await remember(
        store, clock, FINDER, per_hour=settings(tmp_path), text="use uv ", here=HERE, session="s2"
    )
    assert again == first
    assert len(await db.open_notes(store, HERE.scope)) == 1


async def test_a_note_to_global_says_it_waits_for_the_user_in_the_inbox(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    got = await remember(
        store,
        clock,
        FINDER,
        per_hour=settings(tmp_path),
        text="prefers tabs",
        scope="global",
        here=HERE,
        session="s",
    )
    assert got.status == "pending"
    assert got.reason == GLOBAL_HELD
    [note] = await db.open_notes(store, GLOBAL_SCOPE)
    assert note.project is None


async def test_empty_or_oversized_notes_are_refused(tmp_path: Path, store: Store, clock: FakeClock) -> None:
    for text in ("   ", "x" * (TEXT_MAX_CHARS + 1)):
        got = await remember(
            store, clock, FINDER, per_hour=settings(tmp_path), text=text, here=HERE, session="s"
        )
        assert got.status == "refused"
    assert await db.open_notes(store, HERE.scope) == []
