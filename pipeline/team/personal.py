"""Team mode: ``global/`` ("what is about you") is a person's, so it never travels between the
machines of a team.

On a store several machines share, each machine builds ``global/`` from its person's extracts only
(``pipeline.store.consolidation``), and the merge of the team's ``[sync]`` remote keeps this
machine's ``global/`` whatever the remote holds: another person's ``global/`` never reaches this
memory repository's branch, what it publishes, or what it sends the model. A branch that differs from
the remote's only there has nothing to push (``personal_only``), so two people's ``global/`` folders
never chase each other through the remote, one commit per sync; and what is pushed never holds
``global/`` at all (``pipeline.team.outgoing``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.gitrepo import remote
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import GLOBAL_SCOPE

Files = Mapping[str, bytes]


def is_personal(path: str) -> bool:
    return path.split("/", 1)[0] == GLOBAL_SCOPE


def keep_own_global(trees: Mapping[str, Files], *, ours: str = "o") -> dict[str, dict[str, bytes]]:
    """The merge's trees (by name: base, ours, theirs) with every tree's ``global/`` replaced by ours,
    so the merge takes ``global/`` from this machine alone."""
    own = {path: data for path, data in trees[ours].items() if is_personal(path)}
    return {
        name: {**{p: d for p, d in files.items() if not is_personal(p)}, **own}
        for name, files in trees.items()
    }


async def personal_only(repo: MemoryRepo, head: str, tip: str | None) -> bool:
    """Whether commit ``head`` differs from the remote's ``tip`` only in ``global/`` (nothing to push)."""
    if tip is None:
        return False
    ours, theirs = await remote.tree(repo, head), await remote.tree(repo, tip)
    return {p: e for p, e in ours.items() if not is_personal(p)} == {
        p: e for p, e in theirs.items() if not is_personal(p)
    }
