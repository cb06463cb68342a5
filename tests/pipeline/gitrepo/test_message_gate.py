"""The commit message passes the secret gate like every file (issue 24): a message holding a secret
(a project path or a session id can hold one) is committed with the secret replaced, in the
repository and in every scratch copy made from it."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.message_gate import gate_message
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.redaction import Redactor
from tests.pipeline.redaction.secret_fakes import crc_token, rand

KEY = bytes(range(32))


def _token() -> str:
    return crc_token("ghp_")


async def _commit(repo: MemoryRepo, message: str) -> str:
    (repo.path / "global").mkdir(exist_ok=True)
    (repo.path / "global" / "MEMORY.md").write_text(rand(8, string.ascii_lowercase) + "\n")
    await repo.stage("global")
    await repo.commit_staged(message)
    return await repo.git("log", "-1", "--format=%B")


async def test_a_secret_in_the_commit_message_is_redacted(tmp_path: Path) -> None:
    redactor = Redactor(KEY)
    repo = MemoryRepo(tmp_path / "memory", secret_gate=lambda: redactor)
    await repo.ensure()
    token = _token()
    message = f"memd: projects/x: consolidate\n\nProject: /home/dev/src/app-{token}\nSessions: 0a1b2c\n"
    body = await _commit(repo, message)
    assert token not in body
    assert "[REDACTED]" in body
    assert "Sessions: 0a1b2c" in body
    assert body.startswith("memd: projects/x: consolidate")


async def test_scratch_copies_keep_the_gate(tmp_path: Path) -> None:
    redactor = Redactor(KEY)
    repo = MemoryRepo(tmp_path / "memory", secret_gate=lambda: redactor)
    await repo.ensure()
    token = _token()
    async with repo.scratch(tmp_path / "scratch") as clone:
        body = await _commit(clone, f"memd: global\n\nfrom session {token}\n")
    assert token not in body


async def test_a_clean_message_is_committed_as_written(tmp_path: Path) -> None:
    redactor = Redactor(KEY)
    repo = MemoryRepo(tmp_path / "memory", secret_gate=lambda: redactor)
    await repo.ensure()
    message = "memd: global: consolidate\n\nMemd-Run: 20261203T101010Z-ab12\n"
    assert (await _commit(repo, message)).rstrip("\n") == message.rstrip("\n")


class _NoSpans:
    def find(self, text: str) -> list[object]:
        return ["a finding without a position"] if "ghp_" in text else []


def test_a_finding_without_a_position_refuses_the_message() -> None:
    with pytest.raises(MemoryRepoError):
        gate_message("memd: " + _token(), _NoSpans())
    assert gate_message("memd: clean", _NoSpans()) == "memd: clean"


async def test_the_commits_team_mode_crafts_pass_the_gate(tmp_path: Path) -> None:
    """What is pushed lists the subjects of the local commits it carries, and the local branch records
    it merged: both messages pass the gate, whatever a local commit's subject holds."""
    from pipeline.gitrepo import crafted
    from pipeline.team.outgoing import adopt, outgoing

    redactor = Redactor(KEY)
    repo = MemoryRepo(tmp_path / "memory", secret_gate=lambda: redactor)
    await repo.ensure()
    start = (await repo.git("rev-parse", "HEAD")).strip()
    token = _token()
    # A commit made by hand in the memory repository (no gate on its subject).
    (repo.path / "projects" / "p").mkdir(parents=True)
    (repo.path / "projects" / "p" / "a.md").write_text("shared\n")
    await repo.stage("projects/p")
    await repo.git("commit", "-q", "--no-verify", "-m", f"notes for deploy with {token}")
    head = (await repo.git("rev-parse", "HEAD")).strip()
    assert token in await repo.git("log", "-1", "--format=%B")
    sent = await outgoing(repo, "main", head, start)
    body = await repo.git("log", "-1", "--format=%B", sent)
    assert token not in body
    assert body.startswith("notes for deploy with [REDACTED]")
    assert await crafted.tree_of(repo, sent) == await crafted.tree_of(repo, head)
    made = await crafted.commit_tree(repo, await crafted.tree_of(repo, head), [head], f"memd: {token}\n")
    assert await repo.git("log", "-1", "--format=%B", made) == "memd: [REDACTED]\n\n"
    merged = await adopt(repo, head, sent)
    assert token not in await repo.git("log", "-1", "--format=%B", merged)


async def test_a_crafted_commit_whose_secret_cannot_be_located_is_refused(tmp_path: Path) -> None:
    from pipeline.gitrepo import crafted

    repo = MemoryRepo(tmp_path / "memory", secret_gate=_NoSpans)
    await repo.ensure()
    head = (await repo.git("rev-parse", "HEAD")).strip()
    tree = await crafted.tree_of(repo, head)
    with pytest.raises(MemoryRepoError):
        await crafted.commit_tree(repo, tree, [head], "memd: " + _token())
    assert (await repo.git("rev-parse", "HEAD")).strip() == head
