"""Which scopes of the memory repository's branch hold a session's inputs: a ``rollout_summaries/``
file whose ``session:`` header names it, or a ``raw_memories.md`` section of it. With ``[sync]`` the
branch holds every machine's inputs, so a session this machine never extracted is found here too
(``memd forget --session`` of another machine's session).

The branch's committed tree is searched (``git grep`` on ``HEAD`` for fixed strings, each hit then read as memd's format), not
the work tree: what a person left uncommitted there is not memory.
"""

from __future__ import annotations

from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import GLOBAL_SCOPE, PROJECTS_DIR, RAW_MEMORIES, ROLLOUT_DIR, is_scope
from pipeline.memory.inputs import raw_sections, summary_session


def _scope_of(path: str) -> str | None:
    parts = path.split("/")
    if parts[0] == GLOBAL_SCOPE and len(parts) >= 2:
        scope = GLOBAL_SCOPE
    elif parts[0] == PROJECTS_DIR and len(parts) >= 3:
        scope = f"{PROJECTS_DIR}/{parts[1]}"
    else:
        return None
    return scope if is_scope(scope) else None


async def scopes_holding(repo: MemoryRepo, session_id: str) -> dict[str, int]:
    """The scopes of the branch holding inputs of ``session_id``, each with how many input files
    (summaries, and ``raw_memories.md`` sections) name it. Empty when the repository has no commit
    or the id cannot be a session's (a control character in it)."""
    if not session_id or any(ord(c) < 32 or ord(c) == 127 for c in session_id) or "`" in session_id:
        return {}
    if not (repo.path / ".git").is_dir() or await repo.head() is None:
        return {}
    out = await repo.git(
        "grep",
        "-z",
        "-l",
        "-F",
        "-I",
        "--no-textconv",
        "-e",
        f"session: {session_id}",
        "-e",
        f"## Session `{session_id}`",
        "HEAD",
        "--",
        f":(glob){GLOBAL_SCOPE}/{ROLLOUT_DIR}/*.md",
        f":(glob){GLOBAL_SCOPE}/{RAW_MEMORIES}",
        f":(glob){PROJECTS_DIR}/*/{ROLLOUT_DIR}/*.md",
        f":(glob){PROJECTS_DIR}/*/{RAW_MEMORIES}",
        check=False,
    )
    found: dict[str, int] = {}
    for name in out.split("\0"):  # ``-z -l``: ``HEAD:<path>`` per file with a candidate line
        path = name.strip("\n").removeprefix("HEAD:")
        scope = _scope_of(path) if name.strip("\n").startswith("HEAD:") else None
        if scope is not None and await _names(repo, path, session_id):
            found[scope] = found.get(scope, 0) + 1
    return found


async def _names(repo: MemoryRepo, path: str, session_id: str) -> bool:
    """Whether the file at ``path`` (on ``HEAD``) holds an input of ``session_id``: a summary whose
    header names it, or a ``raw_memories.md`` with a section of it (a fixed-string hit may be in the
    text, or a longer id)."""
    text = await repo.git("cat-file", "blob", f"HEAD:{path}", check=False)
    if path.endswith(f"/{RAW_MEMORIES}"):
        return any(section.session == session_id for section in raw_sections(text))
    return summary_session(text) == session_id
