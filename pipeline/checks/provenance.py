"""memd's own bookkeeping on topic files after the agent: ``created``, ``updated``, ``sources``.

The model is never trusted with provenance or time. For each topic file, against the snapshot
taken before the agent ran (``snapshot_topics``):

- unchanged: kept, minus forgotten sessions in ``sources``;
- new or changed: ``created`` from its previous version (following a rename) or today,
  ``updated`` today, ``sources`` = previous sources + the sessions this run consumed (or, for a
  run that consumed none, the sources of the topics it rewrote), minus forgotten sessions.

A run whose new inputs rest on tool output only (``tool_only``: each consumed extract's memories
are all ``tool`` evidence) cannot have learned anything else: every topic it wrote is stamped
``evidence: tool``, whatever the model wrote, and published marked as such.

A topic whose sources were all forgotten is removed, and so is a topic past its ``expires`` date
(unless the person pinned it);
memd drops their lines from ``MEMORY.md`` itself. A topic that never had sources (a person wrote
it by hand) keeps an empty list and is left alone.

Before the agent runs after a forget, ``withdraw_topics`` deletes every topic citing a forgotten
session (not only the fully orphaned ones), so the agent rebuilds it from the remaining inputs
and nothing learned from the forgotten session can survive in it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from pipeline.layout import is_topic_path
from pipeline.memory import frontmatter
from pipeline.memory.listing import drop_index_lines, list_scope


@dataclass(frozen=True)
class TopicSnapshot:
    sha256: str
    meta: frontmatter.Frontmatter | None
    text: str = ""
    """The file as it was (``pipeline.checks.tool_marks`` reads the tokens it held)."""


@dataclass
class ProvenanceReport:
    stamped: list[str] = field(default_factory=list)
    from_tools: list[str] = field(default_factory=list)
    """Topics this run wrote that memd marked ``evidence: tool`` (the model had not)."""
    removed: dict[str, str] = field(default_factory=dict)
    """Removed topic file -> why (``forgotten`` or ``expired``)."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot_topics(scope_dir: Path) -> dict[str, TopicSnapshot]:
    """The topic files as they are before the agent runs (content hash and parsed frontmatter)."""
    out: dict[str, TopicSnapshot] = {}
    for rel in list_scope(scope_dir).files:
        if not is_topic_path(rel):
            continue
        data = (scope_dir / rel).read_bytes()
        text = data.decode("utf-8", errors="replace")
        try:
            meta: frontmatter.Frontmatter | None = frontmatter.parse(data.decode("utf-8")).meta
        except (frontmatter.FrontmatterError, UnicodeDecodeError):
            meta = None
        out[rel] = TopicSnapshot(_digest(data), meta, text)
    return out


def apply_provenance(
    scope_dir: Path,
    before: dict[str, TopicSnapshot],
    *,
    today: date,
    run_sources: Iterable[str],
    live_sources: Iterable[str],
    forgotten: Iterable[str],
    renames: dict[str, str] | None = None,
    tool_only: bool = False,
) -> ProvenanceReport:
    """Stamp provenance on every topic file of ``scope_dir``; remove orphaned and expired topics.

    ``renames`` maps a new path to the path it was renamed from (git's rename detection);
    ``tool_only``: the run's new inputs rest on tool output only (see the module docstring).
    """
    consumed, live, gone = set(run_sources), set(live_sources), set(forgotten)
    renames = renames or {}
    report = ProvenanceReport()
    current = {rel for rel in list_scope(scope_dir).files if is_topic_path(rel)}
    rewritten: set[str] = set()
    for rel in current:
        if rel not in before or _digest((scope_dir / rel).read_bytes()) != before[rel].sha256:
            rewritten.add(rel)
    deleted = set(before) - current
    fallback: set[str] = set()
    for rel in (rewritten & set(before)) | deleted:
        meta = before[rel].meta
        if meta is not None:
            fallback |= set(meta.sources)
    fallback = fallback or live

    for rel in sorted(current):
        path = scope_dir / rel
        try:
            topic = frontmatter.parse(path.read_text(encoding="utf-8"))
        except (frontmatter.FrontmatterError, UnicodeDecodeError):
            continue  # validation reports it to the agent
        prior_rel = rel if rel in before else renames.get(rel)
        prior = before[prior_rel].meta if prior_rel in before else None
        if rel in rewritten:
            sources = set(prior.sources if prior else ()) | (consumed or fallback)
            created = prior.created if prior and prior.created else today
            meta = topic.meta.with_provenance(created=created, updated=today, sources=tuple(sources - gone))
            if tool_only and not meta.from_tools:
                meta = replace(meta, evidence=frontmatter.TOOL_EVIDENCE)
                report.from_tools.append(rel)
            # The person's keys are theirs: a model never sets them (``pipeline.checks.guard``).
            meta = replace(meta, pinned=bool(prior and prior.pinned), edited=prior.edited if prior else None)
        else:
            sources = set(topic.meta.sources)
            meta = topic.meta.with_provenance(
                created=topic.meta.created or today,
                updated=topic.meta.updated or today,
                sources=tuple(sources - gone),
            )
        if sources and not meta.sources:
            path.unlink()
            report.removed[rel] = "forgotten"
            continue
        if meta.expires is not None and meta.expires < today and not meta.pinned:
            path.unlink()
            report.removed[rel] = "expired"
            continue
        text = frontmatter.render(meta, topic.body)
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
            report.stamped.append(rel)
    if report.removed:
        drop_index_lines(scope_dir, set(report.removed))
    return report


def citing_topics(before: dict[str, TopicSnapshot], sessions: Iterable[str]) -> list[str]:
    """The topic files whose recorded ``sources`` include any of ``sessions``."""
    gone = set(sessions)
    return sorted(
        rel for rel, snap in before.items() if snap.meta is not None and gone & set(snap.meta.sources)
    )


def withdraw_topics(scope_dir: Path, topics: Iterable[str]) -> list[str]:
    """Delete ``topics`` from the scope and their lines from ``MEMORY.md``; return what went."""
    gone: list[str] = []
    for rel in topics:
        path = scope_dir / rel
        if path.is_file() and not path.is_symlink():
            path.unlink()
            gone.append(rel)
    if gone:
        drop_index_lines(scope_dir, set(gone))
    return gone
