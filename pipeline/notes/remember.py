"""``memory_remember``: a note an agent (or its user, through it) wants kept, as an input of its scope's
next consolidation.

The note goes through the secret gate first (a note holding a secret is refused, naming the rule),
then the scope's rate limit (``per_hour``: ``[notes] remember_per_hour``, counted in the state
store for every agent session of this machine together, ``OPEN_NOTES_MAX`` waiting at most), then waits in the store as an input
of the next consolidation of its scope: the project of the server's working directory, or global.
Phase 2 reads it as the agent's words (``ORIGIN``), weighed as tool evidence, never as the user's.

The server cannot tell whether the user wrote a note or the agent did, and ``global/`` holds only
what rests on the user's own words (issue 24): so a run bringing a note to global always waits in
the inbox, whatever ``[review] mode`` says, and lands only when the user accepts it there. A note to
a project follows ``[review]`` like tool evidence does (``tool_evidence = "inbox"`` holds it too).

The same text handed again for the same scope is not a new note: the answer is the first one's
state (``applied`` once a run landed it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from pipeline import invisible
from pipeline.clock import Clock
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.layout import GLOBAL_SCOPE
from pipeline.notes.caps import OPEN_NOTES_MAX, REASON_MAX_CHARS, TEXT_MAX_CHARS
from pipeline.notes.gate import refusal, secret_rules
from pipeline.projects import ProjectResolver, scope_for
from pipeline.store import Store
from pipeline.store import notes as db

ORIGIN = "agent via MCP"
"""Where a note came from, as phase 2 is told: the agent's words (or the user's as the agent relayed
them: memd cannot tell), never evidence of what the user said."""
RATE_WINDOW = timedelta(hours=1)
GLOBAL_HELD = "a note to global/ lands only when you accept its run in the inbox (`memd inbox`)"

Status = Literal["pending", "applied", "refused"]
ScopeChoice = Literal["project", "global"]


@dataclass(frozen=True)
class Remembered:
    status: Status
    id: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Here:
    """Where the server runs: its project (None: none) and that project's scope."""

    project: str | None
    scope: str

    @classmethod
    def of(cls, cwd: str) -> Here:
        """The project of ``cwd``, resolved as memd resolves a session's (``pipeline.projects``)."""
        project = ProjectResolver().resolve(cwd)
        return cls(project, scope_for(project))


def note_id(number: int) -> str:
    return f"note-{number}"


async def remember(
    store: Store,
    clock: Clock,
    finder: SecretFinder,
    *,
    per_hour: int,
    text: str,
    scope: ScopeChoice = "project",
    reason: str | None = None,
    here: Here,
    session: str,
) -> Remembered:
    """Check and record one note (see the module docstring)."""
    # Nothing invisible is kept: a reviewer would never see it (``pipeline.invisible``).
    text, reason = invisible.strip(text).strip(), invisible.strip(reason or "").strip() or None
    if not text:
        return Remembered("refused", reason="the note is empty")
    if len(text) > TEXT_MAX_CHARS:
        return Remembered("refused", reason=f"the note is longer than {TEXT_MAX_CHARS} characters")
    if reason is not None and len(reason) > REASON_MAX_CHARS:
        return Remembered("refused", reason=f"the reason is longer than {REASON_MAX_CHARS} characters")
    rules = secret_rules(finder, text, reason)
    if rules:
        return Remembered("refused", reason=refusal(rules, "the note"))
    target = GLOBAL_SCOPE if scope == "global" else here.scope
    project = None if target == GLOBAL_SCOPE else here.project
    if target != GLOBAL_SCOPE and project is None:
        return Remembered("refused", reason="the server's working directory is in no project")
    held = GLOBAL_HELD if target == GLOBAL_SCOPE else None
    earlier = await db.same_note(store, target, text)
    if earlier is not None:
        state = await db.note_state(store, earlier)
        if state == "rejected":
            return Remembered("refused", note_id(earlier), "the user rejected this note in the inbox")
        return Remembered("applied" if state == "applied" else "pending", note_id(earlier), held)
    now = clock.now()
    number = await db.add_note_capped(
        store,
        scope=target,
        project=project,
        text=text,
        reason=reason,
        origin=ORIGIN,
        session=session,
        now=now,
        since=now - RATE_WINDOW,
        per_hour=per_hour,
        open_max=OPEN_NOTES_MAX,
    )
    if number == "rate":
        return Remembered(
            "refused",
            reason=f"this scope was handed {per_hour} notes in the last hour, by every agent session on "
            "this machine together ([notes] remember_per_hour)",
        )
    if number == "open":
        return Remembered(
            "refused",
            reason=f"this scope holds {OPEN_NOTES_MAX} notes waiting for memd's next consolidation",
        )
    return Remembered("pending", note_id(number), held)
