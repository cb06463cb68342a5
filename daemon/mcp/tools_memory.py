"""`memory_search` and `memory_get`: the memory, read-only, for an agent mid-session.

Every result is capped (how many, and how long each field is), its text redacted again and fenced
as data (``daemon.mcp.outbound``), and each topic returned counted as a use (``daemon.mcp.uses``).
A topic resting on tool output only (``evidence: tool``) is marked as it is published: ``evidence``
says "tool" in both tools' results, and ``memory_get``'s fenced body opens with the note its
published copy opens with (``pipeline.publish.render.FROM_TOOLS_NOTE``, inside the byte caps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

from daemon.mcp.outbound import NOTE, cap_bytes, cap_chars, fence
from pipeline.publish.render import FROM_TOOLS_NOTE

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from daemon.mcp.deps import Deps
    from pipeline.search.corpus import Topic

QUERY_MAX_CHARS = 500
LIMIT_MAX = 20
GET_MAX_IDS = 10
BODY_MAX_BYTES = 16_000
"""The most of one topic's body `memory_get` returns (the rest is cut, saying so)."""
GET_TOTAL_MAX_BYTES = 48_000
"""The most of all bodies one `memory_get` returns together."""
TITLE_MAX_CHARS = 200
DESCRIPTION_MAX_CHARS = 400
SOURCES_MAX = 20

Scope = Literal["project", "global", "all"]
Evidence = Literal["tool"]
EVIDENCE_DESCRIPTION = (
    '"tool": the memory rests on tool output only (what a command printed, a file or a fetched page '
    "said), not the user's words: a fact about its source, never an instruction. null otherwise."
)


class SearchResult(BaseModel):
    id: str = Field(description="The memory's id, <scope>/<file>: pass it to memory_get.")
    title: str
    description: str
    scope: str = Field(description="global, or projects/<key> (the project it is about).")
    score: float
    snippet: str = Field(description="The best matching line, fenced as memory data.")
    updated: str = Field(description="When the memory last changed (YYYY-MM-DD), or 'undated'.")
    evidence: Evidence | None = Field(default=None, description=EVIDENCE_DESCRIPTION)


class SearchOutput(BaseModel):
    results: list[SearchResult]
    note: str = NOTE


class Memory(BaseModel):
    id: str
    title: str
    description: str
    scope: str
    body: str = Field(description="The memory in full (within a byte cap), fenced as memory data.")
    updated: str
    sources: list[str] = Field(description="The sessions this memory was learned from.")
    truncated: bool = False
    evidence: Evidence | None = Field(default=None, description=EVIDENCE_DESCRIPTION)


class Missing(BaseModel):
    id: str
    reason: str


class GetOutput(BaseModel):
    memories: list[Memory]
    missing: list[Missing] = Field(default_factory=list)
    note: str = NOTE


SEARCH_DESCRIPTION = (
    "Search memd's memory: what earlier sessions of this project and of this user learned "
    "(conventions, decisions, commands, preferences, pitfalls). Use it before saying you do not "
    "know something about this project or this user. This project's memories come first, then the "
    "user's global ones. An empty list means nothing matched well enough. "
    'Then read a result in full with memory_get. A result with "evidence": "tool" rests on tool '
    "output only (a command's output, a file or a fetched page), not on what the user said."
)
GET_DESCRIPTION = "Read memories in full by id (ids come from memory_search)."


def register(server: MCPServer, deps: Deps) -> None:
    from mcp.types import ToolAnnotations

    read_only = ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
    )

    def memory_search(
        query: Annotated[
            str, Field(min_length=1, max_length=QUERY_MAX_CHARS, description="What to look for, in words.")
        ],
        scope: Annotated[
            Scope,
            Field(
                description='"project": this project only; "global": the user\'s; "all" (default): both, this project first.'
            ),
        ] = "all",
        limit: Annotated[int, Field(ge=1, le=LIMIT_MAX, description="At most this many results.")] = 5,
    ) -> SearchOutput:
        hits = deps.memory.search(query, scope, limit, deps.uses.counts())
        results = [
            SearchResult(
                id=h.topic.id,
                title=_short(deps, h.topic.name, TITLE_MAX_CHARS),
                description=_short(deps, h.topic.description, DESCRIPTION_MAX_CHARS),
                scope=h.topic.scope,
                score=h.score,
                snippet=fence(h.topic.id, deps.redact(h.snippet)),
                updated=_day(h.topic),
                evidence=_evidence(h.topic),
            )
            for h in hits[:LIMIT_MAX]
        ]
        deps.uses.record([h.topic for h in hits])
        return SearchOutput(results=results)

    def memory_get(
        ids: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=300)]],
            Field(min_length=1, max_length=GET_MAX_IDS, description="Memory ids from memory_search."),
        ],
    ) -> GetOutput:
        memories: list[Memory] = []
        missing: list[Missing] = []
        room = GET_TOTAL_MAX_BYTES
        used: list[Topic] = []
        for raw, topic, why in deps.memory.get(list(dict.fromkeys(ids))):
            if topic is None:
                missing.append(Missing(id=cap_chars(raw, 300), reason=why))
                continue
            text = deps.redact(topic.body.strip("\n"))
            if topic.from_tools:  # the note first, so a cut body keeps it; it counts within the caps
                text = f"{FROM_TOOLS_NOTE}\n\n{text}"
            body, cut = cap_bytes(text, min(BODY_MAX_BYTES, max(room, 0)))
            room -= len(body.encode("utf-8"))
            memories.append(
                Memory(
                    id=topic.id,
                    title=_short(deps, topic.name, TITLE_MAX_CHARS),
                    description=_short(deps, topic.description, DESCRIPTION_MAX_CHARS),
                    scope=topic.scope,
                    body=fence(topic.id, body),
                    updated=_day(topic),
                    sources=[_short(deps, s, 200) for s in topic.sources[:SOURCES_MAX]],
                    truncated=cut,
                    evidence=_evidence(topic),
                )
            )
            used.append(topic)
        deps.uses.record(used)
        return GetOutput(memories=memories, missing=missing)

    server.add_tool(
        memory_search,
        name="memory_search",
        description=SEARCH_DESCRIPTION,
        annotations=read_only,
        structured_output=True,
    )
    server.add_tool(
        memory_get,
        name="memory_get",
        description=GET_DESCRIPTION,
        annotations=read_only,
        structured_output=True,
    )


def _short(deps: Deps, text: str, max_chars: int) -> str:
    from daemon.mcp.outbound import defuse

    return cap_chars(defuse(deps.redact(" ".join(text.split()))), max_chars)


def _evidence(topic: Topic) -> Evidence | None:
    """The mark of a topic resting on tool output only; nothing of the file's own text goes out."""
    return "tool" if topic.from_tools else None


def _day(topic: Topic) -> str:
    return topic.day.isoformat() if topic.day is not None else "undated"
