"""What tombstoned sessions taught, taken out of one scope's files (``bury_scope``): the one rule a
merge (``pipeline.sync.merge``) and a rewrite of the history (``pipeline.memory.forget_history``)
apply to a tree.

A session whose hash ``tombstones/`` holds loses its summary (``rollout_summaries/``), its section of
``raw_memories.md``, and every topic citing it in ``sources`` (with its index line); the digest
becomes the placeholder when a topic went.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from pipeline.layout import INDEX, PLACEHOLDER_SUMMARY, RAW_MEMORIES, ROLLOUT_DIR, SUMMARY, is_topic_path
from pipeline.memory import frontmatter, tombstones
from pipeline.memory.inputs import join_raw_sections, raw_sections, summary_session
from pipeline.memory.listing import index_links


@dataclass
class Buried:
    files: dict[str, bytes]
    dropped: list[str] = field(default_factory=list)
    """The session summaries that went."""
    withdrawn: list[str] = field(default_factory=list)
    """The topic files that went (they cite a tombstoned session)."""


def bury_scope(files: Mapping[str, bytes], graves: Collection[str]) -> Buried:
    """One scope's files (``rel -> bytes``) without what the sessions ``graves`` names taught."""
    out = dict(files)
    if not graves:
        return Buried(out)
    found = set(graves)
    dropped: list[str] = []
    for rel, data in files.items():
        if rel.startswith(f"{ROLLOUT_DIR}/"):
            session = summary_session(data.decode("utf-8", "replace"))
            if session is not None and tombstones.is_tombstoned(session, found):
                del out[rel]
                dropped.append(rel)
    raw = out.get(RAW_MEMORIES)
    if raw is not None:
        sections = raw_sections(raw.decode("utf-8", "replace"))
        keep = [s for s in sections if not tombstones.is_tombstoned(s.session, found)]
        if len(keep) != len(sections):
            out[RAW_MEMORIES] = join_raw_sections(keep).encode("utf-8")
    withdrawn = sorted(rel for rel, data in out.items() if is_topic_path(rel) and cites(data, found))
    for rel in withdrawn:
        del out[rel]
    if withdrawn:
        out = drop_index_lines(out, set(withdrawn))
        if SUMMARY in out:
            out[SUMMARY] = PLACEHOLDER_SUMMARY
    return Buried(out, sorted(dropped), withdrawn)


def cites(data: bytes, graves: set[str]) -> bool:
    try:
        topic = frontmatter.parse(data.decode("utf-8"))
    except (frontmatter.FrontmatterError, UnicodeDecodeError):
        return False
    return any(tombstones.is_tombstoned(s, graves) for s in topic.meta.sources)


def drop_index_lines(files: dict[str, bytes], removed: set[str]) -> dict[str, bytes]:
    index = files.get(INDEX)
    if index is None:
        return files
    lines = index.decode("utf-8", "replace").splitlines(keepends=True)
    keep = [line for line in lines if not any(t in removed for _n, t in index_links(line))]
    return {**files, INDEX: "".join(keep).encode("utf-8")}
