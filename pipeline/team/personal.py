"""Team mode: ``global/`` ("what is about you") is a person's, so it never travels between the
machines of a team.

On a store several machines share, each machine builds ``global/`` from its person's extracts only
(``pipeline.store.consolidation``), and the merge of the team's ``[sync]`` remote keeps this
machine's ``global/`` whatever the remote holds: another person's ``global/`` never reaches this
memory repository's branch, what it publishes, or what it sends the model.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.memory.layout import GLOBAL_SCOPE

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
