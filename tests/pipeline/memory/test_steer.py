"""One memory steered by the person (issue 25): forget, edit, pin, each one commit in a real git
repository, authored by the person, signed by memd, with the ``Memd-Action`` trailer."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from daemon.runtime import memory_repo
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import PLACEHOLDER_SUMMARY
from pipeline.memory import frontmatter
from pipeline.memory.likeness import alike, shingles
from pipeline.memory.steer import (
    SteerRefused,
    TopicMissing,
    edit_topic,
    forget_topic,
    pin_topic,
)
from pipeline.redaction import Redactor
from pipeline.settings import Settings, default_values

SCOPE = "projects/app-1a2b3c4d"
AUTHOR = "Ada <memd-abc@host>"
DEPLOY = (
    "---\nname: Deploy\ndescription: How to deploy the app\ntype: project\ncreated: 2026-10-01\n"
    'updated: 2026-10-02\nsources: ["sess-1"]\n---\n\nDeploy with `fly deploy --remote-only` from the '
    "main branch after the tests pass.\n"
)
TESTING = (
    "---\nname: Testing\ndescription: How tests run\ntype: project\ncreated: 2026-10-01\n"
    'updated: 2026-10-02\nsources: ["sess-1"]\n---\n\nRun `make test`.\n'
)
INDEX = "# Memory index\n\n- [deploy.md](deploy.md) — deploying\n- [testing.md](testing.md) — tests\n"


def settings_for(tmp_path: Path) -> Settings:
    values = default_values({"HOME": str(tmp_path)})
    values["paths"]["memory_dir"] = str(tmp_path / "memory")
    values["paths"]["state_dir"] = str(tmp_path / "state")
    return Settings.model_validate(values)


async def make_repo(tmp_path: Path) -> MemoryRepo:
    redactor = Redactor(b"steer-test-key-0123456789abcdef")
    repo = memory_repo(settings_for(tmp_path), secret_gate=lambda: redactor)
    await repo.ensure()
    folder = repo.path / SCOPE
    folder.mkdir(parents=True)
    for name, text in {
        "deploy.md": DEPLOY,
        "testing.md": TESTING,
        "MEMORY.md": INDEX,
        "memory_summary.md": "# Summary\n\nThe app.\n",
    }.items():
        (folder / name).write_text(text)
    await repo.stage(SCOPE)
    await repo.commit_staged("memd: consolidate\n\nMemd-Run: r1\n")
    return repo


async def last_commit(repo: MemoryRepo) -> tuple[str, str, str]:
    """The author, the committer and the message of HEAD."""
    out = await repo.git("log", "-1", "--format=%an <%ae>%x00%cn%x00%B")
    author, committer, body = out.split("\x00", 2)
    return author, committer, body


async def test_forget_removes_the_topic_and_its_index_line_in_one_commit_by_the_person(
    tmp_path: Path,
) -> None:
    repo = await make_repo(tmp_path)
    before = await repo.head()
    done = await forget_topic(repo, SCOPE, "deploy.md", scratch_parent=tmp_path / "scratch", author=AUTHOR)

    assert done.commit == await repo.head() != before
    assert not (repo.path / SCOPE / "deploy.md").exists()
    index = (repo.path / SCOPE / "MEMORY.md").read_text()
    assert "deploy.md" not in index
    assert "testing.md" in index
    assert int((await repo.git("rev-list", "--count", f"{before}..HEAD")).strip()) == 1
    author, committer, body = await last_commit(repo)
    assert author == AUTHOR
    assert committer == "memd"
    assert f"Memd-Action: forget {SCOPE}/deploy.md" in body
    if repo.signer is not None:  # ssh-keygen is here: signed like every memd commit
        assert "gpgsig" in await repo.git("cat-file", "commit", "HEAD")
    assert await repo.dirty_paths(SCOPE) == []

    record = done.forgotten("2026-12-03T18:00:00+00:00")
    assert record.id == f"{SCOPE}/deploy.md"
    assert record.name == "Deploy"
    assert "fly" not in repr(record.as_json())  # never the text
    assert alike(record.shingles, shingles("Deploy with fly deploy --remote-only from the main branch"))

    with pytest.raises(TopicMissing):
        await forget_topic(repo, SCOPE, "deploy.md", scratch_parent=tmp_path / "scratch", author=AUTHOR)


async def test_forget_replaces_the_digest_by_the_placeholder_in_the_same_commit(tmp_path: Path) -> None:
    """The digest is written from every topic, in the model's words: replaced whatever it says (here a
    paraphrase sharing no three words with the topic), so no copy of the head keeps the memory."""
    repo = await make_repo(tmp_path)
    folder = repo.path / SCOPE
    (folder / "memory_summary.md").write_text("# Summary\n\nShips through Fly, remotely, off main.\n")
    await repo.stage(SCOPE)
    await repo.commit_staged("memd: consolidate\n\nMemd-Run: r2\n")
    before = await repo.head()

    done = await forget_topic(repo, SCOPE, "deploy.md", scratch_parent=tmp_path / "scratch", author=AUTHOR)
    assert done.digest_withdrawn
    assert (folder / "memory_summary.md").read_bytes() == PLACEHOLDER_SUMMARY
    changed = await repo.git("diff", "--name-only", f"{before}..HEAD")
    record, *rest = changed.split()  # the forget's record travels in the same commit (issue 32)
    assert record.startswith("forgotten/")
    assert rest == [f"{SCOPE}/MEMORY.md", f"{SCOPE}/deploy.md", f"{SCOPE}/memory_summary.md"]
    assert await repo.git("show", f"HEAD:{SCOPE}/memory_summary.md") == PLACEHOLDER_SUMMARY.decode()

    again = await forget_topic(repo, SCOPE, "testing.md", scratch_parent=tmp_path / "scratch", author=AUTHOR)
    assert again.digest_withdrawn  # still the placeholder, waiting to be rebuilt
    assert (folder / "memory_summary.md").read_bytes() == PLACEHOLDER_SUMMARY


async def test_forget_in_a_scope_without_a_digest_writes_none(tmp_path: Path) -> None:
    repo = await make_repo(tmp_path)
    await repo.git("rm", "-q", f"{SCOPE}/memory_summary.md")
    await repo.commit_staged("memd: no digest\n")
    done = await forget_topic(repo, SCOPE, "deploy.md", scratch_parent=tmp_path / "scratch", author=AUTHOR)
    assert done.commit is not None
    assert not done.digest_withdrawn
    assert not (repo.path / SCOPE / "memory_summary.md").exists()


async def test_edit_keeps_the_persons_text_as_theirs_and_memds_provenance(tmp_path: Path) -> None:
    repo = await make_repo(tmp_path)
    today = date(2026, 12, 3)
    done = await edit_topic(
        repo,
        SCOPE,
        "deploy.md",
        "Deploy only on Fridays, with `make release`.",
        today=today,
        scratch_parent=tmp_path / "scratch",
        author=AUTHOR,
    )
    assert done.commit is not None
    topic = frontmatter.parse((repo.path / SCOPE / "deploy.md").read_text())
    assert topic.body.strip() == "Deploy only on Fridays, with `make release`."
    assert topic.meta.edited == today == topic.meta.updated
    assert topic.meta.created == date(2026, 10, 1)
    assert topic.meta.sources == ("sess-1",)
    assert topic.meta.name == "Deploy"
    author, _committer, body = await last_commit(repo)
    assert author == AUTHOR
    assert f"Memd-Action: edit {SCOPE}/deploy.md" in body

    whole = '---\nname: Releases\ndescription: When we release\ntype: project\nsources: ["forged"]\n---\nFridays.\n'
    await edit_topic(
        repo, SCOPE, "deploy.md", whole, today=today, scratch_parent=tmp_path / "scratch", author=AUTHOR
    )
    topic = frontmatter.parse((repo.path / SCOPE / "deploy.md").read_text())
    assert (topic.meta.name, topic.body.strip(), topic.meta.sources) == ("Releases", "Fridays.", ("sess-1",))


async def test_edit_replaces_the_digest_and_makes_a_tool_topic_the_persons_word(tmp_path: Path) -> None:
    """Issue 36: the digest, written from the topic as it was, would still say the old value; and a
    topic that rested on tool output is, once the person wrote it, their word."""
    repo = await make_repo(tmp_path)
    folder = repo.path / SCOPE
    (folder / "deploy.md").write_text(DEPLOY.replace("type: project\n", "type: project\nevidence: tool\n"))
    (folder / "memory_summary.md").write_text("# Summary\n\nDeploys with fly from main.\n")
    await repo.stage(SCOPE)
    await repo.commit_staged("memd: consolidate\n\nMemd-Run: r2\n")
    assert frontmatter.parse((folder / "deploy.md").read_text()).meta.from_tools
    before = await repo.head()

    done = await edit_topic(
        repo,
        SCOPE,
        "deploy.md",
        "Deploy only on Fridays, with `make release`.",
        today=date(2026, 12, 3),
        scratch_parent=tmp_path / "scratch",
        author=AUTHOR,
    )
    assert done.digest_withdrawn
    assert (folder / "memory_summary.md").read_bytes() == PLACEHOLDER_SUMMARY
    changed = (await repo.git("diff", "--name-only", f"{before}..HEAD")).split()
    assert changed == [f"{SCOPE}/deploy.md", f"{SCOPE}/memory_summary.md"]  # one commit
    topic = frontmatter.parse((folder / "deploy.md").read_text())
    assert topic.meta.evidence == "user"
    assert not topic.meta.from_tools

    same = await edit_topic(
        repo,
        SCOPE,
        "deploy.md",
        "Deploy only on Fridays, with `make release`.",
        today=date(2026, 12, 3),
        scratch_parent=tmp_path / "scratch",
        author=AUTHOR,
    )
    assert same.commit is None  # nothing changed: no commit


async def test_an_edit_with_a_secret_a_bad_frontmatter_or_over_the_cap_changes_nothing(
    tmp_path: Path,
) -> None:
    repo = await make_repo(tmp_path)
    head = await repo.head()
    scratch = tmp_path / "scratch"
    today = date(2026, 12, 3)
    with pytest.raises(SteerRefused, match="secret gate"):
        await edit_topic(
            repo,
            SCOPE,
            "deploy.md",
            "token ghp_" + "a1B2" * 9,
            today=today,
            scratch_parent=scratch,
            author=None,
        )
    with pytest.raises(SteerRefused, match="type"):
        await edit_topic(
            repo,
            SCOPE,
            "deploy.md",
            "---\nname: X\ndescription: Y\ntype: nonsense\n---\nz\n",
            today=today,
            scratch_parent=scratch,
            author=None,
        )
    with pytest.raises(SteerRefused, match="cap"):
        await edit_topic(
            repo,
            SCOPE,
            "deploy.md",
            "x" * 500,
            today=today,
            scratch_parent=scratch,
            author=None,
            max_bytes=300,
        )
    assert await repo.head() == head
    assert (repo.path / SCOPE / "deploy.md").read_text() == DEPLOY


async def test_pin_and_unpin_are_one_commit_each_and_a_second_pin_changes_nothing(tmp_path: Path) -> None:
    repo = await make_repo(tmp_path)
    scratch = tmp_path / "scratch"
    pinned = await pin_topic(repo, SCOPE, "testing.md", True, scratch_parent=scratch, author=AUTHOR)
    assert pinned.commit is not None
    text = (repo.path / SCOPE / "testing.md").read_text()
    assert "pinned: true" in text
    assert frontmatter.parse(text).meta.pinned
    _a, _c, body = await last_commit(repo)
    assert f"Memd-Action: pin {SCOPE}/testing.md" in body

    again = await pin_topic(repo, SCOPE, "testing.md", True, scratch_parent=scratch, author=AUTHOR)
    assert again.commit is None
    assert "nothing to change" in again.line()

    unpinned = await pin_topic(repo, SCOPE, "testing.md", False, scratch_parent=scratch, author=AUTHOR)
    assert unpinned.commit is not None
    assert not frontmatter.parse((repo.path / SCOPE / "testing.md").read_text()).meta.pinned


@pytest.mark.parametrize("file", ["nothing.md", "MEMORY.md", "raw_memories.md", "../x.md"])
async def test_a_topic_that_does_not_exist_is_said_so(tmp_path: Path, file: str) -> None:
    repo = await make_repo(tmp_path)
    with pytest.raises(TopicMissing):
        await pin_topic(repo, SCOPE, file, True, scratch_parent=tmp_path / "s", author=None)


async def test_why_tells_the_commits_their_runs_and_actions_and_an_inbox_run_that_holds_it(
    tmp_path: Path,
) -> None:
    from pipeline.memory.why import story

    repo = await make_repo(tmp_path)
    await pin_topic(repo, SCOPE, "deploy.md", True, scratch_parent=tmp_path / "s", author=AUTHOR)
    async with repo.scratch(tmp_path / "s", owner="run-r2") as clone:
        path = clone.path / SCOPE / "deploy.md"
        path.write_text(path.read_text() + "More.\n")
        await clone.stage(SCOPE)
        await clone.commit_staged("memd: consolidate\n\nMemd-Run: r2\n")
        await repo.park(clone, "inbox/r2")
    told = await story(repo, SCOPE, "deploy.md")
    assert told.meta.pinned
    assert told.meta.sources == ("sess-1",)
    assert [(c.run_id, c.action) for c in told.commits] == [(None, f"pin {SCOPE}/deploy.md"), ("r1", None)]
    assert told.commits[0].author == "Ada"
    assert told.held_in == ["inbox/r2"]
    assert (await story(repo, SCOPE, "testing.md")).held_in == []


def test_likeness_catches_the_same_text_reworded_around_not_a_different_one() -> None:
    from pipeline.memory.likeness import overlap

    forgotten = shingles("Deploy with fly deploy --remote-only from the main branch once the tests pass.")
    same_inside = shingles(
        "## Shipping\n\nAlways: deploy with `fly deploy --remote-only` from the main branch, once the tests pass. "
        "Ask in #ops first."
    )
    other = shingles("Run the tests with make test; the flaky login test is fixed now.")
    assert overlap(forgotten, same_inside) >= 0.5
    assert alike(forgotten, same_inside)
    assert not alike(forgotten, other)
    assert alike(shingles("Use tabs."), shingles("use TABS"))  # short: compared whole
    assert not alike(shingles("Use tabs."), shingles("Use spaces."))
    assert overlap(frozenset(), forgotten) == 0.0


def test_a_model_never_sets_pinned_or_edited_and_a_pinned_topic_never_expires(tmp_path: Path) -> None:
    from pipeline.checks.provenance import apply_provenance, snapshot_topics

    folder = tmp_path / "scope"
    folder.mkdir()
    old = frontmatter.render(
        frontmatter.Frontmatter(
            name="Old",
            description="d",
            type="project",
            sources=("s1",),
            expires=date(2026, 1, 1),
            pinned=True,
        ),
        "old\n",
    )
    (folder / "old.md").write_text(old)
    (folder / "MEMORY.md").write_text("- [old.md](old.md)\n- [new.md](new.md)\n")
    before = snapshot_topics(folder)
    (folder / "new.md").write_text(
        "---\nname: New\ndescription: d\ntype: project\npinned: true\nedited: 2026-12-01\n---\nnew\n"
    )
    report = apply_provenance(
        folder, before, today=date(2026, 12, 3), run_sources=["s2"], live_sources=["s1", "s2"], forgotten=[]
    )
    assert "old.md" not in report.removed  # pinned: never expires
    new = frontmatter.parse((folder / "new.md").read_text()).meta
    assert not new.pinned
    assert new.edited is None


def test_the_forgets_a_commit_message_names_are_read_and_nothing_else() -> None:
    from pipeline.memory.steer import forgets_in

    message = (
        "memd: forget deploy.md\n\n"
        "Memd-Action: forget projects/app-1a2b3c4d/deploy.md\n"
        "Memd-Action: forget global/prefs.md\n"
        "Memd-Action: pin global/other.md\n"
        "Memd-Action: forget projects/../etc/passwd.md\n"
        "Memd-Action: forget global/MEMORY.md\n"
        "Memd-Action: forget nowhere\n"
        "Memd-Run: 20261203T000000Z-abc\n"
    )
    assert forgets_in(message) == [("projects/app-1a2b3c4d", "deploy.md"), ("global", "prefs.md")]


async def test_why_lists_only_the_commits_that_touched_this_scope_s_topic_not_another_project_s(
    tmp_path: Path,
) -> None:
    """Issue 36: git's rename detection under ``--follow`` took another project's file, removed in
    the commit that added this one with the same text, for this topic's past."""
    from pipeline.memory.why import story

    repo = await make_repo(tmp_path)  # r1 wrote SCOPE/deploy.md
    other = "projects/other-9f8e7d6c"
    (repo.path / other).mkdir(parents=True)
    moved = (repo.path / SCOPE / "deploy.md").read_text()
    (repo.path / SCOPE / "deploy.md").unlink()
    (repo.path / other / "deploy.md").write_text(moved)  # same text: git sees a rename
    await repo.stage_paths(SCOPE, other)
    await repo.commit_staged("memd: consolidate\n\nMemd-Run: r2\n")
    told = await story(repo, other, "deploy.md")
    assert [c.run_id for c in told.commits] == ["r2"]
    # A rename inside the scope is still followed: the topic's own past stays.
    (repo.path / other / "deploy-steps.md").write_text(moved)
    (repo.path / other / "deploy.md").unlink()
    await repo.stage_paths(other)
    await repo.commit_staged("memd: consolidate\n\nMemd-Run: r3\n")
    assert [c.run_id for c in (await story(repo, other, "deploy-steps.md")).commits] == ["r3", "r2"]
