"""What the person decided about a scope's topics, held in code after the consolidation agent stops.

Taken before the agent runs (``take``), enforced after it (``enforce``), each breach one sentence
naming the file (a finding for the repair turn; after it, what memd did):

- a topic the person edited (``edited`` in its frontmatter) that the agent changed or deleted is
  restored as it was, with its line in ``MEMORY.md``: phase 2 may add to the scope, never
  overwrite or drop the person's text;
- a pinned topic (``pinned: true``) the agent deleted is restored the same way (the agent may
  rewrite a pinned topic, never delete it);
- a topic that brings back a memory the person forgot (``pipeline.memory.likeness``: the same
  file, or the same text under another name) is removed with its index line: it never lands, and
  the rest of the run still does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.layout import INDEX, is_topic_path
from pipeline.memory import frontmatter
from pipeline.memory.likeness import ForgottenTopic
from pipeline.memory.listing import drop_index_lines, index_links, list_scope


@dataclass(frozen=True)
class Held:
    kept: dict[str, bytes] = field(default_factory=dict)
    """The person's topics (edited or pinned) as they were before the agent: path -> bytes."""
    edited: frozenset[str] = frozenset()
    pinned: frozenset[str] = frozenset()
    index_lines: dict[str, str] = field(default_factory=dict)
    """The line of ``MEMORY.md`` that linked each kept topic before the agent."""
    forgotten: tuple[ForgottenTopic, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.kept or self.forgotten)


def take(scope_dir: Path, forgotten: Iterable[ForgottenTopic] = ()) -> Held:
    """The person's topics of the scope and the memories they forgot, before the agent runs."""
    kept: dict[str, bytes] = {}
    edited: set[str] = set()
    pinned: set[str] = set()
    for rel in list_scope(scope_dir).files:
        if not is_topic_path(rel):
            continue
        data = (scope_dir / rel).read_bytes()
        meta = frontmatter.parse(data.decode("utf-8", errors="replace"), strict=False).meta
        if meta.edited is not None:
            edited.add(rel)
        if meta.pinned:
            pinned.add(rel)
        if meta.edited is not None or meta.pinned:
            kept[rel] = data
    lines: dict[str, str] = {}
    index = scope_dir / INDEX
    if kept and index.is_file() and not index.is_symlink():
        for line in index.read_text(encoding="utf-8", errors="replace").splitlines():
            for _n, target in index_links(line):
                if target in kept:
                    lines.setdefault(target, line)
    return Held(kept, frozenset(edited), frozenset(pinned), lines, tuple(forgotten))


def enforce(scope_dir: Path, held: Held) -> list[str]:
    """Restore the person's topics the agent changed or deleted, remove recreated forgotten memories;
    one sentence per thing memd did (empty: the agent kept to it)."""
    out: list[str] = []
    restored: list[str] = []
    for rel, data in sorted(held.kept.items()):
        path = scope_dir / rel
        present = path.is_file() and not path.is_symlink()
        if present and (rel not in held.edited or path.read_bytes() == data):
            continue
        if path.is_symlink() or (path.exists() and not path.is_file()):
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        restored.append(rel)
        if rel in held.edited:
            how = "changed" if present else "deleted"
            out.append(
                f"{rel} is the person's own text (edited): you {how} it, so memd restored it; leave it "
                "as it is and write anything new in another topic file"
            )
        else:
            out.append(f"{rel} is pinned by the person: you deleted it, so memd restored it; never delete it")
    _relink(scope_dir, restored, held.index_lines)
    if held.forgotten:
        gone: set[str] = set()
        for rel in sorted(list_scope(scope_dir).files):
            if not is_topic_path(rel) or rel in held.kept:
                continue
            body = frontmatter.parse(
                (scope_dir / rel).read_text(encoding="utf-8", errors="replace"), strict=False
            ).body
            for record in held.forgotten:
                why = record.recreated_by(rel, body)
                if why is None:
                    continue
                (scope_dir / rel).unlink()
                gone.add(rel)
                out.append(
                    f"{rel} brings back {record.file}, a memory the person forgot ({why}): memd removed it; "
                    "do not write it again, under any name or in other words"
                )
                break
        if gone:
            drop_index_lines(scope_dir, gone)
    return out


def _relink(scope_dir: Path, restored: list[str], lines: dict[str, str]) -> None:
    """Give each restored topic its old line in ``MEMORY.md`` when no line links it any more."""
    index = scope_dir / INDEX
    if not restored or not index.is_file() or index.is_symlink():
        return
    text = index.read_text(encoding="utf-8")
    linked = {target for _n, target in index_links(text)}
    missing = [lines.get(rel, f"- [{rel}]({rel})") for rel in restored if rel not in linked]
    if missing:
        sep = "" if not text or text.endswith("\n") else "\n"
        index.write_text(text + sep + "\n".join(missing) + "\n", encoding="utf-8")


def prompt_text(held: Held | None) -> str:
    """The prompt's section on what the person decided (empty when nothing)."""
    if not held:
        return ""
    lines = ["", "The person steered this scope's memory by hand; memd enforces it after you stop:"]
    lines += [
        f"- forgotten, never write it again (under any name or in other words; take it out of "
        f"memory_summary.md if the digest still says it): {t.file}"
        + (f' ("{t.name}": {t.description})' if t.name else "")
        for t in held.forgotten
    ]
    lines += [
        f"- written by the person, never change or delete it (add what is new in another topic): {rel}"
        for rel in sorted(held.edited)
    ]
    lines += [f"- pinned by the person, never delete it: {rel}" for rel in sorted(held.pinned - held.edited)]
    return "\n".join(lines) + "\n"
