"""Checking a scope after the consolidation agent stopped: what must hold before memd commits.

- ``MEMORY.md`` and ``memory_summary.md`` exist and are within their caps;
- every topic file is within its cap and has valid frontmatter;
- every link in ``MEMORY.md`` points at an existing file of the scope, one link per line, and every
  topic file is linked; the scope holds no more topic files than its cap;
- only regular ``.md`` files, no symlinks, nothing hidden (memd's own inputs aside);
- the secret gate finds nothing in any file.

Before the checks, memd removes every invisible (default-ignorable) character from the files the
agent writes (``strip_invisible``, ``pipeline.invisible``): nothing hidden reaches a topic.

Each finding is one sentence naming the file; it goes back to the agent for its one repair turn.
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline import invisible
from pipeline.gitrepo.message_gate import SecretFinder, describe_secret
from pipeline.layout import INDEX, SUMMARY, Caps, estimate_tokens, is_input_path, is_topic_path
from pipeline.memory import frontmatter
from pipeline.memory.listing import ScopeListing, index_links, list_scope


def strip_invisible(scope_dir: Path) -> list[str]:
    """Remove every default-ignorable code point from the scope's own files (its inputs are memd's,
    already normalised); return the files changed. A file that is not UTF-8 is left to validation."""
    changed: list[str] = []
    for rel in list_scope(scope_dir).files:
        if is_input_path(rel):
            continue
        path = scope_dir / rel
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if invisible.found(text):
            path.write_text(invisible.strip(text), encoding="utf-8")
            changed.append(rel)
    return changed


def secret_findings(listing: ScopeListing, scope_dir: Path, finder: SecretFinder) -> list[str]:
    out = []
    for rel in listing.files:
        text = (scope_dir / rel).read_text(encoding="utf-8", errors="replace")
        for found in finder.find(text):
            out.append(f"{rel}: the secret gate found a {describe_secret(found, text)}; remove that value")
    return out


def _check_index(scope_dir: Path, listing: ScopeListing, caps: Caps) -> list[str]:
    out: list[str] = []
    if INDEX not in listing.files:
        return [f"{INDEX} is missing: write the index, one line per topic file"]
    text = (scope_dir / INDEX).read_text(encoding="utf-8", errors="replace")
    lines = len(text.splitlines())
    if lines > caps.index_max_lines:
        out.append(
            f"{INDEX} has {lines} lines, over the cap of {caps.index_max_lines}: merge or drop entries"
        )
    if listing.files[INDEX] > caps.index_max_bytes:
        out.append(f"{INDEX} is {listing.files[INDEX]} bytes, over the cap of {caps.index_max_bytes}")
    per_line: dict[int, int] = {}
    for number, _ in index_links(text):
        per_line[number] = per_line.get(number, 0) + 1
    out.extend(
        f"{INDEX} line {number} links to {count} files: one line per topic file"
        for number, count in sorted(per_line.items())
        if count > 1
    )
    linked: set[str] = set()
    for number, target in index_links(text):
        norm = os.path.normpath(target)
        if norm.startswith("..") or os.path.isabs(norm) or norm not in listing.files:
            out.append(f"{INDEX} line {number} links to {target!r}, which is not a file of this scope")
        linked.add(norm)
    for rel in listing.files:
        if is_topic_path(rel) and rel not in linked:
            out.append(f"{rel} is not listed in {INDEX}: add a line for it, or delete the file")
    return out


def _check_files(scope_dir: Path, listing: ScopeListing, caps: Caps) -> list[str]:
    out: list[str] = []
    for rel in listing.symlinks:
        out.append(f"{rel} is a symlink; memory holds regular files only")
    for rel in listing.special:
        out.append(f"{rel} is not a regular file")
    for rel in listing.hidden:
        out.append(f"{rel} is hidden; memory holds no hidden files")
    topics = sum(1 for rel in listing.files if is_topic_path(rel))
    if topics > caps.max_topic_files:
        out.append(
            f"the scope has {topics} topic files, over the cap of {caps.max_topic_files}: merge related topics"
        )
    if SUMMARY not in listing.files:
        out.append(f"{SUMMARY} is missing: write the short digest")
    else:
        tokens = estimate_tokens((scope_dir / SUMMARY).read_text(encoding="utf-8", errors="replace"))
        if tokens > caps.summary_max_tokens:
            out.append(
                f"{SUMMARY} is about {tokens} tokens, over the cap of {caps.summary_max_tokens}: shorten it"
            )
    for rel, size in listing.files.items():
        if is_input_path(rel) or rel in (INDEX, SUMMARY):
            continue
        if not rel.endswith(".md"):
            out.append(f"{rel} is not a .md file")
            continue
        if size > caps.topic_max_bytes:
            out.append(
                f"{rel} is {size} bytes, over the topic cap of {caps.topic_max_bytes}: split or shorten it"
            )
        try:
            topic = frontmatter.parse((scope_dir / rel).read_text(encoding="utf-8"))
        except (frontmatter.FrontmatterError, UnicodeDecodeError) as exc:
            out.append(f"{rel}: {exc}")
            continue
        out.extend(f"{rel}: {p}" for p in frontmatter.problems(topic.meta))
    return out


def validate_scope(scope_dir: Path, caps: Caps, finder: SecretFinder | None) -> list[str]:
    """Every violation in the scope, as sentences for the agent; empty when the scope may be committed."""
    listing = list_scope(scope_dir)
    findings = _check_files(scope_dir, listing, caps) + _check_index(scope_dir, listing, caps)
    if finder is not None:
        findings += secret_findings(listing, scope_dir, finder)
    return findings
