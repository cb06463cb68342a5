"""A memory the person forgot, as a record that travels with the memory: ``forgotten/<hash>``.

``memd memories forget`` writes one record per forgotten topic in the commit that removes it; the
commits are signed like every commit of memd, so a record reaches every trusted machine, and
machines that pair later, the way ``tombstones/`` do. A record holds the topic's scope, its file
name, the hashed shingles of its body (``pipeline.memory.likeness``) and when it was forgotten,
never its text, name or description. Records are never removed, and a merge keeps both sides'.

Every boundary enforces them, from the records in the tree it works on:

- the merge of two machines' memory (``pipeline.sync.merge``): a topic of the record's scope with its
  file name, or most of its text (``ForgottenTopic.recreated_by``), goes with its index line, the
  digest becomes the placeholder, whatever side held it (``scrub_scope``);
- the inputs phase 2 reads: the lines of ``raw_memories.md`` and ``rollout_summaries/`` most of
  whose words run as the forgotten text did go (``scrub_text``), at the forget, at a merge and each
  time memd writes the inputs again;
- the model's output (``pipeline.checks.guard``, given these records with the store's);
- publishing and ``memd mcp``, which never read a topic a record names (``hides``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pipeline.layout import (
    INDEX,
    PLACEHOLDER_SUMMARY,
    RAW_MEMORIES,
    ROLLOUT_DIR,
    SUMMARY,
    is_topic_path,
)
from pipeline.memory import frontmatter
from pipeline.memory.likeness import LIKENESS_THRESHOLD, ForgottenTopic, shingles
from pipeline.memory.listing import index_links
from pipeline.safefile import UnsafeFile, read_capped

FORGOTTEN_DIR = "forgotten"
HASH_CHARS = 32
MAX_RECORD_BYTES = 256 * 1024
"""A record holds at most ``MAX_SHINGLES`` hashes of 20 digits: far under this."""
MAX_SHINGLES = 8000
MAX_RECORDS = 20_000
MIN_SHARED = 2
"""A line of input goes only when it shares at least this many shingles with a forgotten text (and
most of its own)."""
VERSION = 1


def record_bytes(topic: ForgottenTopic) -> bytes:
    """The record of ``topic`` as it is written in the memory repository (no text, name or
    description of the topic: only its scope, file, the hashes of its shingles and the time)."""
    value = {
        "version": VERSION,
        "scope": topic.scope,
        "file": topic.file,
        "shingles": sorted(topic.shingles)[:MAX_SHINGLES],
        "forgotten_at": topic.forgotten_at,
    }
    return (json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def path_of(data: bytes) -> str:
    return f"{FORGOTTEN_DIR}/{hashlib.sha256(data).hexdigest()[:HASH_CHARS]}"


def is_record_path(path: str) -> bool:
    head, _, name = path.partition("/")
    return head == FORGOTTEN_DIR and len(name) == HASH_CHARS and all(c in "0123456789abcdef" for c in name)


def parse(data: bytes) -> ForgottenTopic | None:
    """The record ``data`` holds, or None when it is not one (too big, not JSON, wrong shape)."""
    if len(data) > MAX_RECORD_BYTES:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("shingles"), list):
        return None
    if len(value["shingles"]) > MAX_SHINGLES:
        return None
    return ForgottenTopic.from_json(value)


def records_in(files: Mapping[str, bytes]) -> list[ForgottenTopic]:
    """The records a tree (``path -> bytes``) holds."""
    out = [parse(data) for path, data in sorted(files.items()) if is_record_path(path)]
    return [r for r in out if r is not None]


def record_files(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The record files of a tree (``path -> bytes``), as they are."""
    return {path: data for path, data in files.items() if is_record_path(path)}


def read(top: Path) -> list[ForgottenTopic]:
    """The records in a checkout ``top`` (a symlink, a non-file or an oversized file is no record)."""
    folder = top / FORGOTTEN_DIR
    if folder.is_symlink() or not folder.is_dir():
        return []
    out: list[ForgottenTopic] = []
    for entry in sorted(folder.iterdir())[:MAX_RECORDS]:
        if not is_record_path(f"{FORGOTTEN_DIR}/{entry.name}"):
            continue
        try:
            data = read_capped(entry, MAX_RECORD_BYTES, follow_symlinks=False)
        except (OSError, UnsafeFile):
            continue
        found = parse(data)
        if found is not None:
            out.append(found)
    return out


def write(top: Path, topic: ForgottenTopic) -> str:
    """Write the record of ``topic`` under a checkout ``top``; its path."""
    data = record_bytes(topic)
    rel = path_of(data)
    folder = top / FORGOTTEN_DIR
    if folder.is_symlink():
        folder.unlink()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = top / rel
    if target.is_symlink() or (target.exists() and not target.is_file()):
        target.unlink()
    target.write_bytes(data)
    return rel


def of_scope(records: Iterable[ForgottenTopic], scope: str) -> list[ForgottenTopic]:
    return [r for r in records if r.scope == scope]


def with_records(held: Sequence[ForgottenTopic], records: Iterable[ForgottenTopic]) -> list[ForgottenTopic]:
    """``held`` (this store's, with their names) and the repository's ``records`` of other files."""
    out = list(held)
    seen = {(t.scope, t.file, t.shingles) for t in out}
    for r in records:
        if (r.scope, r.file, r.shingles) not in seen:
            seen.add((r.scope, r.file, r.shingles))
            out.append(r)
    return out


def recreated(records: Iterable[ForgottenTopic], file: str, text: str) -> str | None:
    """Why the topic ``file`` with ``text`` is a forgotten memory again (None: it is not)."""
    body = frontmatter.parse(text, strict=False).body
    for r in records:
        why = r.recreated_by(file, body)
        if why is not None:
            return f"{r.id}: {why}"
    return None


def hides(records: Iterable[ForgottenTopic], scope: str, file: str, text: str) -> bool:
    """Whether a reader (publishing, ``memd mcp``) must leave the topic out: a record says it was
    forgotten."""
    return recreated(of_scope(records, scope), file, text) is not None


def line_forgotten(line: str, records: Sequence[ForgottenTopic]) -> bool:
    """Whether most of the words of ``line`` run as a forgotten text did."""
    mine = shingles(line)
    if not mine:
        return False
    for r in records:
        shared = len(mine & r.shingles)
        if shared >= min(MIN_SHARED, len(mine)) and shared / len(mine) >= LIKENESS_THRESHOLD:
            return True
    return False


def scrub_text(text: str, records: Sequence[ForgottenTopic]) -> str:
    """``text`` (an input: a raw memory, a session summary) without its lines that hold a forgotten
    text."""
    if not records:
        return text
    lines = text.splitlines(keepends=True)
    keep = [line for line in lines if not line_forgotten(line, records)]
    return text if len(keep) == len(lines) else "".join(keep)


def scrub_scope(
    files: Mapping[str, bytes], records: Sequence[ForgottenTopic]
) -> tuple[dict[str, bytes], list[str]]:
    """One scope's files (``rel -> bytes``) without the topics ``records`` (of this scope) forgot,
    their index lines, and the input lines holding their text; the digest becomes the placeholder
    when a topic went. Returns the files and the topics removed."""
    out = dict(files)
    if not records:
        return out, []
    removed = sorted(
        rel
        for rel, data in files.items()
        if is_topic_path(rel) and recreated(records, rel, data.decode("utf-8", "replace")) is not None
    )
    for rel in removed:
        del out[rel]
    if removed and INDEX in out:
        lines = out[INDEX].decode("utf-8", "replace").splitlines(keepends=True)
        keep = [line for line in lines if not any(t in removed for _n, t in index_links(line))]
        out[INDEX] = "".join(keep).encode("utf-8")
    if removed and SUMMARY in out:
        out[SUMMARY] = PLACEHOLDER_SUMMARY
    for rel, data in files.items():
        if rel == RAW_MEMORIES or rel.startswith(f"{ROLLOUT_DIR}/"):
            text = data.decode("utf-8", "replace")
            scrubbed = scrub_text(text, records)
            if scrubbed != text:
                out[rel] = scrubbed.encode("utf-8")
    return out, removed


def scrub_dir(scope_dir: Path, records: Sequence[ForgottenTopic]) -> list[str]:
    """``scrub_scope`` on a scope's folder in a checkout: the topics removed."""
    if not records or scope_dir.is_symlink() or not scope_dir.is_dir():
        return []
    files: dict[str, bytes] = {}
    for path in scope_dir.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        rel = path.relative_to(scope_dir).as_posix()
        if is_topic_path(rel) or rel in (INDEX, SUMMARY, RAW_MEMORIES) or rel.startswith(f"{ROLLOUT_DIR}/"):
            files[rel] = path.read_bytes()
    kept, removed = scrub_scope(files, records)
    for rel, data in files.items():
        target = scope_dir / rel
        if rel not in kept:
            target.unlink()
        elif kept[rel] != data:
            target.write_bytes(kept[rel])
    return removed
