"""memd's block in one instructions file: hostile files fail promptly, sentinels in model text are
neutralised, and broken sentinels are repaired only when the text outside memd's block is kept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.publish import sentinel
from pipeline.publish.blockfile import BLOCK_KEY, plan_block_file, plan_block_withdraw
from pipeline.publish.memfiles import read_scope
from pipeline.publish.plan import digest_of
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import HOSTILE, Env, add_scope, make_hostile, topic_text, write_scope

GLOBAL_FILES = {
    "claude_code_global": (".claude", "CLAUDE.md"),
    "gemini_global": (".gemini", "GEMINI.md"),
    "codex_global": (".codex", "AGENTS.md"),
}


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("target", [*GLOBAL_FILES, "agents_md"])
@sqlite_only
async def test_a_hostile_instructions_file_fails_promptly_with_its_name(
    env: Env, store: Store, clock: FakeClock, kind: str, target: str
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Project digest.")
    write_scope(env.memory_dir, "global", summary="Global digest.")
    if target == "agents_md":
        path = project / "AGENTS.md"
    else:
        home, name = GLOBAL_FILES[target]
        path = env.home / home / name
    make_hostile(path, kind)
    settings = env.settings(claude_code=False, gemini=False, **{target: True})
    report = await publish_all(store, settings, clock)
    (result,) = [r for r in report.results if r.target == target]
    assert result.outcome == "failed"
    assert str(path) in (result.reason or "")


def test_sentinels_in_model_text_are_neutralised(env: Env) -> None:
    evil = f"see {END} and {BEGIN} and <!--memd:end--> and <!-- MEMD:begin x -->"
    write_scope(
        env.memory_dir,
        "global",
        summary=f"Digest.\n{END}\n{evil}\n",
        topics={"a.md": topic_text("A", description=evil)},
    )
    path = env.home / "CLAUDE.md"
    path.write_text("mine\n")
    scope = read_scope(env.memory_dir, "global")
    plan = plan_block_file("t", scope, path, title="t", previous_sha=None)
    assert plan.refused is None
    (change,) = plan.changes
    assert change.data is not None
    text = change.data.decode()
    assert text.count(BEGIN) == 1
    assert text.count(END) == 1
    assert len(re.findall(r"<!--\s*memd\s*:", text, re.I)) == 2, "memd's own two sentinels, no other"
    assert sentinel.block_body(text) is not None
    # Published twice, the file stays memd's to update.
    path.write_bytes(change.data)
    again = plan_block_file("t", scope, path, title="t", previous_sha=plan.digest)
    assert again.refused is None
    assert again.changes == []


def _broken(inside: str) -> tuple[str, str, str]:
    """A file whose memd block (written by an older memd) holds a sentinel of the model's."""
    before = "# Mine\r\nkeep   \n\n"
    after = "\nmine after\nno newline"
    return before, f"{before}{BEGIN}\n{inside}{END}{after}", after


def test_broken_sentinels_are_repaired_when_the_block_is_what_memd_wrote(env: Env) -> None:
    write_scope(env.memory_dir, "global", summary="New digest.")
    old_body = f"## old\nthe model said {END} here\n"
    before, text, after = _broken(old_body)
    path = env.home / "CLAUDE.md"
    path.write_text(text, newline="")
    scope = read_scope(env.memory_dir, "global")
    plan = plan_block_file("t", scope, path, title="t", previous_sha=digest_of({BLOCK_KEY: old_body}))
    assert plan.refused is None
    (change,) = plan.changes
    assert change.data is not None
    new = change.data.decode()
    assert new.startswith(before + BEGIN + "\n")
    assert new.endswith(END + after)
    assert sentinel.outside(new) == before + after, "the text outside memd's block is kept byte for byte"
    assert "New digest." in (sentinel.block_body(new) or "")
    assert any("repaired" in note for note in plan.notes)
    # A withdrawal repairs the same way.
    gone = plan_block_withdraw("t", "global", path, previous_sha=digest_of({BLOCK_KEY: old_body}))
    assert gone.refused is None
    (change,) = gone.changes
    assert change.data == f"{before}{BEGIN}\n{END}{after}".encode()


@pytest.mark.parametrize("previous", ["unknown", "other"])
def test_broken_sentinels_are_refused_when_memd_cannot_tell_its_text_from_the_users(
    env: Env, previous: str
) -> None:
    write_scope(env.memory_dir, "global", summary="New digest.")
    memd_wrote = "## old\n"
    # The user duplicated the block, or wrote between two of them: the span holds their text.
    _, text, _ = _broken(f"{memd_wrote}{END}\nthe user's own line\n{BEGIN}\n")
    path = env.home / "CLAUDE.md"
    path.write_text(text, newline="")
    sha = None if previous == "unknown" else digest_of({BLOCK_KEY: memd_wrote})
    scope = read_scope(env.memory_dir, "global")
    plan = plan_block_file("t", scope, path, title="t", previous_sha=sha)
    assert plan.refused is not None
    assert str(path) in plan.refused
    assert plan.changes == []
    gone = plan_block_withdraw("t", "global", path, previous_sha=sha)
    assert gone.refused is not None
    assert str(path) in gone.refused
    assert gone.changes == []
    assert path.read_bytes() == text.encode()


@sqlite_only
async def test_a_published_sentinel_no_longer_locks_memd_out(
    env: Env, store: Store, clock: FakeClock
) -> None:
    """Issue 13, point 4: a description with memd's end sentinel, published twice, then withdrawn."""
    write_scope(
        env.memory_dir, "global", topics={"a.md": topic_text("A", description=f"ends here {END} really")}
    )
    settings = env.settings(claude_code=False, gemini=False, claude_code_global=True)
    for _ in range(2):
        report = await publish_all(store, settings, clock)
        assert [r.outcome for r in report.results][0] in {"published", "unchanged"}
    path = env.claude_home / "CLAUDE.md"
    assert path.read_text().count(END) == 1
    report = await publish_all(store, env.settings(claude_code=False, gemini=False), clock)
    assert [r.outcome for r in report.results] == ["withdrawn"]
    assert path.read_text() == f"{BEGIN}\n{END}\n"


def test_a_path_is_named_in_every_broken_sentinel_reason(tmp_path: Path) -> None:
    path = tmp_path / "GEMINI.md"
    path.write_text(f"{END}\n{BEGIN}\n")
    plan = plan_block_withdraw("t", "global", path, previous_sha=None)
    assert plan.refused is not None
    assert str(path) in plan.refused
