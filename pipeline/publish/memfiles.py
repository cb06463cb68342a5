"""Reading a scope of the memory repository from its working tree (read-only, standard library only).

The layout (``pipeline.memory.layout``): ``global/`` and ``projects/<key>/``, each with
``MEMORY.md`` (the index), ``memory_summary.md`` (the digest), topic files ``*.md`` with a small
YAML-style frontmatter (``name``, ``description``, ``type``, ``created``, ``updated``, ``sources``,
optional ``expires``), and the phase-1 inputs (``rollout_summaries/``, ``raw_memories.md``), which
are never published. Symlinks, hidden files and oversized files are ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from pipeline.memory.layout import GLOBAL_SCOPE, INDEX, NOT_TOPICS, PROJECTS_DIR, SUMMARY

TOPIC_MAX_BYTES = 1_000_000
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class Topic:
    file: str
    path: Path
    name: str
    description: str
    type: str
    created: str | None
    updated: str | None
    sources: tuple[str, ...]
    expires: str | None
    text: str

    @property
    def updated_date(self) -> str:
        """The last-updated day (YYYY-MM-DD), from ``updated`` else ``created``; "undated" when neither."""
        for value in (self.updated, self.created):
            if value and (match := _DATE.match(value)):
                return match.group(1)
        return "undated"

    def expired(self, today: date) -> bool:
        if not self.expires or not (match := _DATE.match(self.expires)):
            return False
        try:
            return date.fromisoformat(match.group(1)) < today
        except ValueError:
            return False


@dataclass(frozen=True)
class ScopeMemory:
    scope: str
    path: Path
    summary: str
    index: str
    topics: tuple[Topic, ...]

    @property
    def empty(self) -> bool:
        return not self.summary.strip() and not self.topics


def scope_dir(memory_dir: Path, scope: str) -> Path:
    return memory_dir.joinpath(*scope.split("/"))


def list_scopes(memory_dir: Path) -> list[str]:
    """The scopes present in the working tree: ``global`` first, then ``projects/<key>`` sorted."""
    scopes: list[str] = []
    if _real_dir(memory_dir / GLOBAL_SCOPE):
        scopes.append(GLOBAL_SCOPE)
    projects = memory_dir / PROJECTS_DIR
    if _real_dir(projects):
        for child in sorted(projects.iterdir()):
            if not child.name.startswith(".") and _real_dir(child):
                scopes.append(f"{PROJECTS_DIR}/{child.name}")
    return scopes


def read_scope(memory_dir: Path, scope: str, *, today: date | None = None) -> ScopeMemory:
    """One scope's summary, index and topic files (newest first); expired topics left out when ``today`` is given."""
    folder = scope_dir(memory_dir, scope)
    topics = []
    if _real_dir(folder):
        for path in sorted(folder.iterdir()):
            topic = read_topic(path)
            if topic is not None and not (today is not None and topic.expired(today)):
                topics.append(topic)
    topics.sort(key=lambda t: (t.updated_date if t.updated_date != "undated" else "", t.file), reverse=True)
    return ScopeMemory(
        scope=scope,
        path=folder,
        summary=_read_small(folder / SUMMARY),
        index=_read_small(folder / INDEX),
        topics=tuple(topics),
    )


def read_topic(path: Path) -> Topic | None:
    """A topic file, or None when ``path`` is not one (not ``*.md``, reserved, hidden, a symlink, too big)."""
    name = path.name
    if not name.endswith(".md") or name in NOT_TOPICS or name.startswith("."):
        return None
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > TOPIC_MAX_BYTES:
            return None
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    meta = parse_frontmatter(text)
    sources = meta.get("sources", ())
    return Topic(
        file=name,
        path=path,
        name=_scalar(meta.get("name")) or name.removesuffix(".md"),
        description=_scalar(meta.get("description")) or "",
        type=_scalar(meta.get("type")) or "",
        created=_scalar(meta.get("created")),
        updated=_scalar(meta.get("updated")),
        sources=tuple(sources) if isinstance(sources, tuple) else ((sources,) if sources else ()),
        expires=_scalar(meta.get("expires")),
        text=text,
    )


def parse_frontmatter(text: str) -> dict[str, str | tuple[str, ...]]:
    """``key: value`` lines between leading ``---`` lines; ``[a, b]`` and ``- a`` lists become tuples."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    meta: dict[str, str | list[str]] = {}
    list_key: str | None = None
    for line in lines[1:]:
        stripped = line.strip()
        if stripped in {"---", "..."}:
            break
        if list_key is not None and stripped.startswith("- "):
            items = meta[list_key]
            assert isinstance(items, list)
            items.append(_unquote(stripped[2:].strip()))
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key.startswith((" ", "\t")):
            continue
        key, value = key.strip(), value.strip()
        list_key = None
        if value.startswith("[") and value.endswith("]"):
            meta[key] = _list(value)
        elif value == "":
            meta[key] = []
            list_key = key
        else:
            meta[key] = _unquote(value)
    return {k: (tuple(v) if isinstance(v, list) else v) for k, v in meta.items()}


def _list(value: str) -> list[str]:
    """``["a", "b"]`` (JSON, as memd writes it) or a plain ``[a, b]``."""
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if isinstance(parsed, list):
        return [str(v) for v in parsed if isinstance(v, str | int | float)]
    return [_unquote(v.strip()) for v in value[1:-1].split(",") if v.strip()]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            parsed = json.loads(value)
        except ValueError:
            return value[1:-1]
        return parsed if isinstance(parsed, str) else value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def _scalar(value: str | tuple[str, ...] | None) -> str | None:
    if value is None or isinstance(value, tuple):
        return None
    return value or None


def _read_small(path: Path) -> str:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > TOPIC_MAX_BYTES:
            return ""
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()
