"""One memory steered by the person (issue 25): forget, edit, pin, each one commit in a real git
repository, authored by the person, signed by memd, with the ``Memd-Action`` trailer."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from daemon.runtime import memory_repo
from pipeline.memory import frontmatter
from pipeline.memory.likeness import alike, shingles
from pipeline.memory.repository import MemoryRepo
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
