"""Why a memory is what it is, as the memory repository tells it: the commits that touched its file
(who made each, the consolidation run it names by ``Memd-Run``, the person's action it names by
``Memd-Action``), the inbox runs that would change it, and what its frontmatter says (its sources,
whether it is edited or pinned). ``memd memories why`` adds what the state store knows
(``daemon.steer.why_memory``)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.gitrepo.repository import RUN_TRAILER, MemoryRepo
from pipeline.layout import check_file, check_scope
from pipeline.memory import frontmatter
from pipeline.memory.steer import ACTION_TRAILER, read_topic

LOG_LIMIT = 100
_SEP, _END = "\x1f", "\x1e"


@dataclass(frozen=True)
class FileCommit:
    sha: str
    at: str
    author: str
    subject: str
    run_id: str | None
    """The consolidation run that made it (``Memd-Run``)."""
    action: str | None
    """The person's action it records (``Memd-Action``: ``forget <id>``, ``edit <id>``...)."""


@dataclass(frozen=True)
class TopicStory:
    scope: str
    file: str
    meta: frontmatter.Frontmatter
    commits: list[FileCommit]
    held_in: list[str]
    """The inbox branches (``inbox/<run>``) whose run would change this topic."""


def _trailer(body: str, key: str) -> str | None:
    for line in reversed(body.splitlines()):
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            return value.strip() or None
    return None


async def story(repo: MemoryRepo, scope: str, file: str, *, limit: int = LOG_LIMIT) -> TopicStory:
    """The topic's frontmatter and history (``TopicMissing`` when there is no such topic)."""
    text = read_topic(repo, scope, file)
    path = f"{check_scope(scope)}/{check_file(file)}"
    out = await repo.git(
        "log",
        f"-n{limit}",
        "--follow",
        "--name-only",
        f"--format={_END}%H{_SEP}%cI{_SEP}%an{_SEP}%s{_SEP}%B{_SEP}",
        "HEAD",
        "--",
        path,
    )
    commits = []
    for entry in out.split(_END):
        entry = entry.strip("\n")
        if not entry:
            continue
        sha, at, author, subject, body, names = entry.split(_SEP, 5)
        if not any(name.startswith(f"{check_scope(scope)}/") for name in names.split("\n")):
            break  # git's rename detection crossed into another scope: that past is not this topic's
        commits.append(
            FileCommit(sha, at, author, subject, _trailer(body, RUN_TRAILER), _trailer(body, ACTION_TRAILER))
        )
    held = []
    for branch in await repo.inbox_branches():
        changed = await repo.git("diff", "--name-only", f"HEAD...{branch}", "--", path)
        if changed.strip():
            held.append(branch)
    return TopicStory(scope, file, frontmatter.parse(text, strict=False).meta, commits, held)
