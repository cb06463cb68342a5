"""What a scope's folder in the memory repository holds, and the caps memd enforces on it in code (the
kernel: every layer names the scopes and their files; standard library only).

```
<memory_dir>/
  global/                     what holds across projects
  projects/<key>/             one project
    MEMORY.md                 the index: one line per topic file, what it holds and when to open it
    memory_summary.md         the short always-loaded digest
    <topic>.md                typed topic files with frontmatter (pipeline/memory/frontmatter.py)
    raw_memories.md           materialized phase-1 input (memd writes it; read-only to the agent)
    rollout_summaries/*.md    materialized phase-1 input (memd writes it; read-only to the agent)
```
"""

from __future__ import annotations

import math
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pipeline.frozen import frozen_by_position

if TYPE_CHECKING:
    from pipeline.settings import MemoriesSettings

INDEX = "MEMORY.md"
SUMMARY = "memory_summary.md"
RAW_MEMORIES = "raw_memories.md"
ROLLOUT_DIR = "rollout_summaries"
PLACEHOLDER_SUMMARY = (
    b"# Summary\n\nmemd is rebuilding this digest: a session or a memory it drew on was forgotten.\n"
)
"""The digest of a scope until it is consolidated again, after a forget withdrew what it drew on
without a model: a forgotten session's topics (no API key, the model failed, or a tombstone from
another machine), or one topic a person forgot (``memd memories forget``; the digest is written
from every topic, so it may repeat it). The one placeholder memd writes."""

PLACEHOLDERS = (
    PLACEHOLDER_SUMMARY,
    b"# Summary\n\nmemd is rebuilding this digest: a session it drew on was forgotten.\n",
    b"# Summary\n\nmemd is rebuilding this digest: a session it drew on was forgotten on another machine.\n",
)
"""Every placeholder digest a memd wrote (an older one's too, which may come by sync): each is
recognised as one, only ``PLACEHOLDER_SUMMARY`` is written."""
NOT_TOPICS = frozenset({INDEX, SUMMARY, RAW_MEMORIES})
"""The ``.md`` files at a scope's top level that are not topic files."""

INDEX_MAX_LINES = 200
INDEX_MAX_BYTES = 25_000

TOPIC_TYPES = ("user", "feedback", "project", "reference")
GLOBAL_SCOPE = "global"
PROJECTS_DIR = "projects"
BYTES_PER_TOKEN = 3.5
"""A deliberately low bytes-per-token figure, so a token estimate errs high (caps hold for real)."""

_SCOPE_RE = re.compile(r"^(global|projects/[A-Za-z0-9_][A-Za-z0-9._-]{0,199})$")


def is_scope(scope: str) -> bool:
    """``global`` or ``projects/<key>`` with a key of safe characters (not starting with a dot, no slashes)."""
    return bool(_SCOPE_RE.match(scope))


def check_scope(scope: str) -> str:
    if not is_scope(scope):
        raise ValueError(f"not a memory scope: {scope!r} (expected 'global' or 'projects/<key>')")
    return scope


_FILE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}(/[A-Za-z0-9_][A-Za-z0-9._-]{0,199})*$")


def check_file(rel: str | None) -> str:
    """A file's path relative to its scope, as given from outside (a page's address): plain names
    only, so it is never an option, a pathspec pattern or a way out of the scope."""
    if not rel or not _FILE_RE.match(rel) or ".." in rel.split("/"):
        raise ValueError(f"not a file of a scope: {str(rel)[:80]!r}")
    return rel


def estimate_tokens(text: str) -> int:
    """A pessimistic token count (no tokenizer offline): UTF-8 bytes over ``BYTES_PER_TOKEN``."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def is_input_path(rel: str) -> bool:
    """Whether ``rel`` (relative to the scope) is a materialized phase-1 input memd owns."""
    parts = PurePosixPath(rel).parts
    return rel == RAW_MEMORIES or (len(parts) >= 1 and parts[0] == ROLLOUT_DIR)


def is_topic_path(rel: str) -> bool:
    """A topic file: any ``.md`` file of the scope that is not the index, the summary or an input."""
    return rel.endswith(".md") and rel not in (INDEX, SUMMARY) and not is_input_path(rel)


def is_placeholder(summary: Path) -> bool:
    """Whether the file ``summary`` (a scope's ``memory_summary.md``) is a placeholder digest a
    forget left (any of ``PLACEHOLDERS``: here, or on another machine)."""
    if summary.is_symlink() or not summary.is_file():
        return False
    if summary.stat().st_size not in {len(p) for p in PLACEHOLDERS}:
        return False
    return summary.read_bytes() in PLACEHOLDERS


@frozen_by_position
class Caps:
    """The size caps of one scope, from ``[memories]``; enforced by the memory tool and by validation."""

    summary_max_tokens: int
    topic_max_bytes: int
    max_topic_files: int
    index_max_lines: int = INDEX_MAX_LINES
    index_max_bytes: int = INDEX_MAX_BYTES

    @classmethod
    def of(cls, memories: MemoriesSettings) -> Caps:
        """The caps ``[memories]`` sets."""
        return cls(
            summary_max_tokens=memories.summary_token_cap,
            topic_max_bytes=memories.topic_file_max_bytes,
            max_topic_files=memories.max_topic_files,
        )

    @property
    def summary_max_bytes(self) -> int:
        """The byte size that keeps the summary under its token cap by ``estimate_tokens``."""
        return int(self.summary_max_tokens * BYTES_PER_TOKEN)

    def max_bytes_for(self, rel: str) -> int:
        if rel == INDEX:
            return self.index_max_bytes
        if rel == SUMMARY:
            return self.summary_max_bytes
        return self.topic_max_bytes
