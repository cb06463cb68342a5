"""Which scopes of the memory repository's branch hold a session's inputs: by the ``session:`` header
of a summary and the sections of ``raw_memories.md``, on the committed branch only."""

from __future__ import annotations

from pathlib import Path

from pipeline.gitrepo.repository import MemoryRepo
from pipeline.memory.held import scopes_holding


def _summary(session: str, body: str = "What happened.") -> str:
    return f"session: {session}\nagent: claude_code\nproject: /p\n\n{body}\n"


def _raw(*sessions: str) -> str:
    return "# Raw memories\n\nOne section per session, oldest first. Written by memd; read-only.\n" + "".join(
        f"\n## Session `{s}`\nagent: claude_code; last_activity: 2026-11-01T10:00:00Z; "
        f"rollout_summary_file: rollout_summaries/{s}.md\n\n- a note\n"
        for s in sessions
    )


async def _repo(tmp_path: Path, files: dict[str, str]) -> MemoryRepo:
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    for rel, text in files.items():
        path = repo.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    await repo.git("add", "-A")
    await repo.git("commit", "-q", "-m", "inputs")
    return repo


async def test_the_scopes_holding_a_sessions_inputs_are_found_and_only_they(tmp_path: Path) -> None:
    repo = await _repo(
        tmp_path,
        {
            "projects/app-1a2b3c4d/rollout_summaries/beta.md": _summary("beta"),
            "projects/app-1a2b3c4d/raw_memories.md": _raw("beta", "alpha"),
            "global/rollout_summaries/beta.md": _summary("beta"),
            "global/raw_memories.md": _raw("beta"),
            # a longer id, and the id in a summary's text, are not the session's inputs
            "projects/other-11111111/rollout_summaries/beta2.md": _summary("beta2", "session: beta"),
            "projects/other-11111111/raw_memories.md": _raw("beta2"),
            # a topic file naming it is what the session taught, not an input
            "projects/notes-22222222/topic.md": "session: beta\n",
        },
    )
    assert await scopes_holding(repo, "beta") == {"projects/app-1a2b3c4d": 2, "global": 2}
    assert await scopes_holding(repo, "alpha") == {"projects/app-1a2b3c4d": 1}
    assert await scopes_holding(repo, "gamma") == {}
    assert await scopes_holding(repo, "bet") == {}
    assert await scopes_holding(repo, "beta\nsession: beta2") == {}


async def test_uncommitted_text_in_the_work_tree_is_not_held(tmp_path: Path) -> None:
    repo = await _repo(tmp_path, {"projects/app-1a2b3c4d/rollout_summaries/a.md": _summary("alpha")})
    stray = repo.path / "projects" / "app-1a2b3c4d" / "rollout_summaries" / "b.md"
    stray.write_text(_summary("beta"))
    assert await scopes_holding(repo, "beta") == {}
    assert await scopes_holding(MemoryRepo(tmp_path / "nowhere"), "beta") == {}
