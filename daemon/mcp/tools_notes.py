"""`memory_remember` and `memory_feedback`: what an agent hands memd mid-session (``pipeline.notes``).

The only tools of `memd mcp` that write, and only their own records in the state store (a note, a
verdict); the memory repository changes at phase 2's next run of the scope, never here. The store
is opened for each call and never created or migrated: where memd has not run yet, or its store is
not at this memd's schema (the daemon migrates it when it starts), the call is refused saying so.
The cap on notes is per scope, counted in the store for every server of this machine together
(``pipeline.notes.remember``); each server process is one session for the cap on verdicts.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

from pipeline.notes.caps import NOTE_MAX_CHARS, REASON_MAX_CHARS, TEXT_MAX_CHARS

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from daemon.mcp.deps import Deps
    from pipeline.store import Store

OPEN_TIMEOUT_S = 10.0
ID_MAX_CHARS = 300


class Unavailable(Exception):
    """The state store cannot take the record now (the message says why)."""


class RememberOutput(BaseModel):
    status: Literal["pending", "applied", "refused"] = Field(
        description="pending: kept, waiting for memd's next consolidation of the scope; applied: in "
        "memory already; refused: not kept (reason says why)."
    )
    id: str | None = Field(default=None, description="The note's id (note-<n>).")
    reason: str | None = None


class FeedbackOutput(BaseModel):
    status: Literal["recorded", "refused"]
    reason: str | None = None


REMEMBER_DESCRIPTION = (
    "Hand memd a note to keep: something durable learned in this session about this project "
    '(scope "project", the default) or about the user (scope "global"), with why in reason. memd '
    "adds it to memory at its next consolidation of that scope (a note to global waits for the "
    "user's review first). Never put a secret in a note: a note holding one is refused."
)
FEEDBACK_DESCRIPTION = (
    "Tell memd what a memory you read (its id from memory_search or memory_get) was worth: helped, "
    "misled, stale (out of date) or wrong. stale and wrong are shown to the user, and memd fixes or "
    "drops the memory at its next consolidation: say in note what is wrong or what changed."
)


def register(server: MCPServer, deps: Deps) -> None:
    from mcp.types import ToolAnnotations

    session = f"mcp-{os.getpid()}-{secrets.token_hex(4)}"
    per_hour: list[int] = []

    def rate() -> int:
        if not per_hour:  # read once, at the first note (the server starts without it)
            from daemon.config import load_settings

            per_hour.append(load_settings(deps.config_path).settings.notes.remember_per_hour)
        return per_hour[0]

    async def memory_remember(
        text: Annotated[
            str,
            Field(min_length=1, max_length=TEXT_MAX_CHARS, description="The note, in a few plain sentences."),
        ],
        scope: Annotated[
            Literal["project", "global"],
            Field(description='"project" (default): this project\'s memory; "global": about the user.'),
        ] = "project",
        reason: Annotated[
            str | None, Field(max_length=REASON_MAX_CHARS, description="Why it is worth keeping.")
        ] = None,
    ) -> RememberOutput:
        from pipeline.notes.remember import Here, remember
        from pipeline.projects import scope_for

        # The project's scope under its key now (the search may read a folder not yet moved to it).
        own = deps.memory.session()
        try:
            async with _store(deps) as store:
                got = await remember(
                    store,
                    deps.clock,
                    deps.redact.redactor(),
                    per_hour=rate(),
                    text=text,
                    scope=scope,
                    reason=reason,
                    here=Here(own.project, scope_for(own.project)),
                    session=session,
                )
        except Unavailable as exc:
            return RememberOutput(status="refused", reason=str(exc))
        except Exception as exc:  # the store's own error: said by its kind (its text may quote SQL)
            return RememberOutput(status="refused", reason=_failed(exc))
        return RememberOutput(status=got.status, id=got.id, reason=got.reason)

    async def memory_feedback(
        id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=ID_MAX_CHARS,
                description="The memory's id, <scope>/<file>, as memory_search gives it.",
            ),
        ],
        verdict: Annotated[
            Literal["helped", "misled", "stale", "wrong"], Field(description="What the memory was worth.")
        ],
        note: Annotated[
            str | None, Field(max_length=NOTE_MAX_CHARS, description="What is wrong, or what changed.")
        ] = None,
    ) -> FeedbackOutput:
        from daemon.mcp.memory import OTHER_PROJECT
        from pipeline.notes.feedback import feedback
        from pipeline.projects.scopes import ScopeNotFound, topic_id

        try:
            named = topic_id(id)
        except ScopeNotFound:
            pass  # feedback() says why
        else:
            if named.scope not in deps.memory.scopes("all")[1]:  # said alike whether it exists or not
                return FeedbackOutput(
                    status="refused", reason=f"{named} is another project's memory: {OTHER_PROJECT}"
                )
        try:
            async with _store(deps) as store:
                got = await feedback(
                    store,
                    deps.clock,
                    deps.redact.redactor(),
                    memory_dir=deps.memory_dir,
                    id=id,
                    verdict=verdict,
                    note=note,
                    session=session,
                )
        except Unavailable as exc:
            return FeedbackOutput(status="refused", reason=str(exc))
        except Exception as exc:  # the store's own error: said by its kind (its text may quote SQL)
            return FeedbackOutput(status="refused", reason=_failed(exc))
        return FeedbackOutput(status=got.status, reason=got.reason)

    hints = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
    server.add_tool(
        memory_remember,
        name="memory_remember",
        description=REMEMBER_DESCRIPTION,
        annotations=ToolAnnotations(**hints, idempotentHint=True),  # the same note again is the first
        structured_output=True,
    )
    server.add_tool(
        memory_feedback,
        name="memory_feedback",
        description=FEEDBACK_DESCRIPTION,
        annotations=ToolAnnotations(**hints, idempotentHint=False),
        structured_output=True,
    )


def _failed(exc: Exception) -> str:
    return f"the state store could not record it ({type(exc).__name__}): nothing was kept"


@asynccontextmanager
async def _store(deps: Deps) -> AsyncIterator[Store]:
    """The state store as this machine, at this memd's schema; ``Unavailable`` otherwise."""
    from daemon.runtime import open_store_reading
    from pipeline.errors import StoreError
    from pipeline.machine import host_id, known_id
    from pipeline.store import machines
    from pipeline.store.migrations import LATEST, check_schema
    from pipeline.store_url import backend, sqlite_path

    if backend(deps.state_db) == "sqlite":
        path = sqlite_path(deps.state_db)
        if path is None or not path.is_file():
            raise Unavailable("memd has not run on this machine yet (no state store): nothing was kept")
    machine = known_id(deps.state_dir)
    try:
        store = await open_store_reading(deps.state_db, state_dir=deps.state_dir, timeout_s=OPEN_TIMEOUT_S)
    except (StoreError, TimeoutError) as exc:
        raise Unavailable(
            f"the state store cannot be opened ({exc or 'timed out'}): nothing was kept"
        ) from None
    try:
        try:
            version = await check_schema(store)
            await machines.recognize(store, machine_id=machine, host=host_id(deps.state_dir, create=False))
        except Exception as exc:  # StoreError, or the database's own (a store of another memd)
            raise Unavailable(
                f"the state store cannot be read ({type(exc).__name__}): nothing was kept"
            ) from None
        if version < LATEST:
            raise Unavailable(
                f"the state store is at schema {version}, this memd's is {LATEST}: restart memd "
                "(`memd run` or its service) so it migrates the store; nothing was kept"
            )
        yield store
    finally:
        await store.close()
