"""``memory_feedback``: what an agent says of a memory it read, recorded beside the hit rate.

``helped`` and ``misled`` are recorded only. ``wrong`` and ``stale`` flag the topic: `memd status`
and the topic's page show it, and its scope's next consolidation is given the flag (with the note,
fenced as data) to fix or drop the topic (``pipeline.store.notes``). The id is the topic's,
``<scope>/<file>`` (``pipeline.projects.scopes.topic_id``), and the topic must be in the memory
repository's working tree (read, never written). A note holding a secret is refused, naming the rule.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pipeline.clock import Clock
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.notes.caps import FEEDBACK_PER_HOUR, NOTE_MAX_CHARS
from pipeline.notes.gate import refusal, secret_rules
from pipeline.projects.scopes import ScopeNotFound, topic_id
from pipeline.store import Store
from pipeline.store import notes as db
from pipeline.vocabulary import Verdict

VERDICTS: tuple[str, ...] = tuple(Verdict)
RATE_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Recorded:
    status: Literal["recorded", "refused"]
    reason: str | None = None


def _is_topic(memory_dir: Path, scope: str, file: str) -> bool:
    """Whether ``<scope>/<file>`` is a regular file of the memory's working tree, no link on the way."""
    path = memory_dir
    for part in (*scope.split("/"), *file.split("/")):
        path = path / part
        try:
            mode = path.lstat().st_mode
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            return False
    return stat.S_ISREG(mode)


async def feedback(
    store: Store,
    clock: Clock,
    finder: SecretFinder,
    *,
    memory_dir: Path,
    id: str,
    verdict: str,
    note: str | None = None,
    session: str,
    known: Iterable[str] = (),
) -> Recorded:
    """Check and record one verdict (see the module docstring)."""
    if verdict not in VERDICTS:
        return Recorded("refused", f"unknown verdict {verdict!r} (one of {', '.join(VERDICTS)})")
    note = (note or "").strip() or None
    if note is not None and len(note) > NOTE_MAX_CHARS:
        return Recorded("refused", f"the note is longer than {NOTE_MAX_CHARS} characters")
    try:
        topic = topic_id(id, known=known)
    except ScopeNotFound as exc:
        return Recorded("refused", str(exc))
    if not _is_topic(memory_dir, topic.scope, topic.file):
        return Recorded("refused", f"no memory {topic} in the memory repository")
    rules = secret_rules(finder, note)
    if rules:
        return Recorded("refused", refusal(rules, "the note"))
    now = clock.now()
    if await db.feedback_since(store, session, now - RATE_WINDOW) >= FEEDBACK_PER_HOUR:
        return Recorded("refused", f"this session gave {FEEDBACK_PER_HOUR} verdicts in the last hour")
    await db.add_feedback(
        store, scope=topic.scope, file=topic.file, verdict=verdict, note=note, session=session, now=now
    )
    return Recorded("recorded")
