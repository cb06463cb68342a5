"""memory_remember's backend: the secret gate, the session's rate limit, the scope, the same note twice."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.layout import GLOBAL_SCOPE
from pipeline.notes.caps import OPEN_NOTES_MAX, TEXT_MAX_CHARS
from pipeline.notes.remember import GLOBAL_HELD, ORIGIN, Here, remember
from pipeline.projects import scope_for
from pipeline.redaction import Redactor
from pipeline.store import Store
from pipeline.store import notes as db
from tests.conftest import as_machine
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


async def test_each_scope_may_be_handed_so_many_notes_an_hour_whatever_the_server(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    two = 2  # [notes] remember_per_hour

    async def note(text: str, session: str = "s1", scope: str = "project") -> str:
        got = await remember(
            store, clock, FINDER, per_hour=two, text=text, here=HERE, session=session, scope=scope
        )  # type: ignore[arg-type]
        return got.status

    assert [await note("one"), await note("two"), await note("three")] == ["pending", "pending", "refused"]
    assert await note("three", session="s2") == "refused"  # another server: the same scope's cap
    assert await note("three", session="s2", scope="global") == "pending"  # another scope, its own
    clock.advance(timedelta(minutes=61))
    assert await note("four") == "pending"
    assert len(await db.open_notes(store, HERE.scope)) == 3


async def test_four_servers_at_once_keep_no_more_than_the_scopes_cap(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    """Issue 32 (F7): 4 agent sessions x 11 notes within a minute kept 40; each server is its own
    connection to the shared store here, all writing at once."""
    per_hour = settings(tmp_path)

    async def server(n: int) -> list[str]:
        async with as_machine(store, store.machine) as own:
            got = []
            for i in range(11):
                done = await remember(
                    own,
                    clock,
                    FINDER,
                    per_hour=per_hour,
                    text=f"s{n} note {i}",
                    here=HERE,
                    session=f"mcp-{n}",
                )
                got.append(done.status)
            return got

    answers = await asyncio.gather(*(server(n) for n in range(4)))
    kept = [a for answer in answers for a in answer if a == "pending"]
    assert len(kept) == per_hour
    assert len(await db.open_notes(store, HERE.scope)) == per_hour


async def test_a_scope_holds_so_many_open_notes_at_most(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    for i in range(OPEN_NOTES_MAX + 3):
        got = await remember(store, clock, FINDER, per_hour=1, text=f"note {i}", here=HERE, session="s")
        assert got.status == ("pending" if i < OPEN_NOTES_MAX else "refused"), (i, got)
        clock.advance(timedelta(minutes=61))
    assert len(await db.open_notes(store, HERE.scope)) == OPEN_NOTES_MAX


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
