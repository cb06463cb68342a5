"""memory_feedback's backend: a verdict on a topic of the memory, recorded; wrong and stale flag it."""

from __future__ import annotations

from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.notes.feedback import feedback
from pipeline.projects import scope_for
from pipeline.redaction import Redactor
from pipeline.store import Store
from pipeline.store import notes as db

FINDER = Redactor(b"notes-test-key-0123456789abcdef")
SCOPE = scope_for("/work/acme")
AWS_KEY = "AKIA" + "QYLPMN5HHHFPZAM2"


def memory(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / SCOPE).mkdir(parents=True)
    (root / SCOPE / "deploy.md").write_text("---\nname: Deploy\n---\nShip with make ship.\n")
    return root


async def test_each_verdict_is_recorded_and_only_wrong_and_stale_flag_the_topic(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    root = memory(tmp_path)
    for verdict, note in (("helped", None), ("misled", None), ("wrong", "it is make deploy now")):
        got = await feedback(
            store,
            clock,
            FINDER,
            memory_dir=root,
            id=f"{SCOPE}/deploy.md",
            verdict=verdict,
            note=note,
            session="s",
        )
        assert got.status == "recorded", got.reason
    assert await db.verdict_counts(store, SCOPE, "deploy.md") == {"helped": 1, "misled": 1, "wrong": 1}
    [flag] = await db.open_flags(store, SCOPE)
    assert (flag.file, flag.verdict, flag.note) == ("deploy.md", "wrong", "it is make deploy now")
    assert [f.id for f in await db.open_flags(store)] == [flag.id]


async def test_a_verdict_on_no_memory_is_refused(tmp_path: Path, store: Store, clock: FakeClock) -> None:
    root = memory(tmp_path)
    (root / SCOPE / "link.md").symlink_to(root / SCOPE / "deploy.md")
    for id_, why in (
        (f"{SCOPE}/absent.md", "no memory"),
        (f"{SCOPE}/link.md", "no memory"),
        ("deploy.md", "not a memory id"),
        (f"{SCOPE}/../../etc/passwd", "not a memory id"),
    ):
        got = await feedback(store, clock, FINDER, memory_dir=root, id=id_, verdict="stale", session="s")
        assert got.status == "refused", id_
        assert why in (got.reason or ""), (id_, got)
    got = await feedback(
        store, clock, FINDER, memory_dir=root, id=f"{SCOPE}/deploy.md", verdict="meh", session="s"
    )
    assert got.status == "refused"
    assert await db.open_flags(store) == []


async def test_a_verdict_whose_note_holds_a_secret_is_refused_naming_the_rule(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    got = await feedback(
        store,
        clock,
        FINDER,
        memory_dir=memory(tmp_path),
        id=f"{SCOPE}/deploy.md",
        verdict="wrong",
        note=f"the key is {AWS_KEY} now",
        session="s",
    )
    assert got.status == "refused"
    assert got.reason is not None
    assert "aws" in got.reason.lower()
    assert AWS_KEY not in got.reason
    assert await db.open_flags(store) == []
