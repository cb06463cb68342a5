"""The merge of two machines' memory, as data: which files the merged tree holds, and which scopes must
be consolidated again.

memd never lets git merge a file (so no conflict marker can land in one): it reads the three trees
(the merge base, this machine's, the remote's) and builds the merged one here, scope by scope:

- a scope only one side changed is that side's;
- a scope both changed keeps the phase-1 inputs of both (a three-way merge of the set of
  ``rollout_summaries/`` files, and ``raw_memories.md`` rebuilt from the sections of the files kept),
  and the remote's topic files, index and digest: this machine then consolidates its own inputs again
  on top of them (``reconsolidate``);
- the tombstones of both sides are kept (``tombstones/``), and applied to every scope: a tombstoned
  session's inputs go, the topic files citing it are withdrawn with their index lines and the digest
  (the scope is consolidated again from what remains), and a scope left with no input at all goes;
- the forget records of both sides are kept (``forgotten/``), and applied to every scope: a topic
  a person forgot (its file, or most of its text) goes whatever side holds it, with its index line
  and its text in the inputs, and the digest becomes the placeholder (``pipeline.memory.forget_records``);
- a scope whose digest is the placeholder a forget left (``awaits_rebuild``: another machine forgot a
  session and could not rebuild it, or a person forgot one memory there) is consolidated again here
  too, even when the merge is a fast-forward.

Anything outside ``README.md``, ``tombstones/``, ``forgotten/`` and the scopes was refused before (``incoming``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pipeline.layout import (
    GLOBAL_SCOPE,
    PLACEHOLDERS,
    PROJECTS_DIR,
    RAW_MEMORIES,
    ROLLOUT_DIR,
    SUMMARY,
    is_input_path,
)
from pipeline.memory import forget_records, tombstones
from pipeline.memory.burial import bury_scope
from pipeline.memory.inputs import join_raw_sections, raw_sections
from pipeline.memory.likeness import ForgottenTopic

Files = Mapping[str, bytes]
ROOT_FILES = ("README.md",)


@dataclass
class MergeResult:
    files: dict[str, bytes]
    reconsolidate: set[str] = field(default_factory=set)
    """Scopes whose topic files this machine must consolidate again (both sides changed them, or a
    tombstone withdrew some)."""
    combined: set[str] = field(default_factory=set)
    """Scopes both sides changed: the remote's topics and both sides' inputs."""
    withdrawn: dict[str, list[str]] = field(default_factory=dict)
    """Topic files a tombstone withdrew, per scope."""
    removed_inputs: int = 0
    cleared: set[str] = field(default_factory=set)
    forgotten: dict[str, list[str]] = field(default_factory=dict)
    """Topic files a forget record (``forgotten/``, either side's) kept out, per scope."""


def scope_of(path: str) -> tuple[str, str] | None:
    """``(scope, path relative to it)`` of a file of a scope, None for any other path."""
    parts = path.split("/")
    if parts[0] == GLOBAL_SCOPE and len(parts) >= 2:
        return GLOBAL_SCOPE, "/".join(parts[1:])
    if parts[0] == PROJECTS_DIR and len(parts) >= 3:
        return f"{PROJECTS_DIR}/{parts[1]}", "/".join(parts[2:])
    return None


def by_scope(files: Files) -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        found = scope_of(path)
        if found is not None:
            out.setdefault(found[0], {})[found[1]] = data
    return out


def merge_trees(base: Files, ours: Files, theirs: Files) -> MergeResult:
    """The merged tree of ``ours`` and ``theirs`` since ``base`` (every one ``path -> bytes``)."""
    result = MergeResult(files={})
    for name in ROOT_FILES:
        chosen = ours.get(name, theirs.get(name))
        if chosen is not None:
            result.files[name] = chosen
    graves = tombstones.hashes_in(ours) | tombstones.hashes_in(theirs)
    for grave in sorted(graves):
        result.files[f"{tombstones.TOMBSTONE_DIR}/{grave}"] = tombstones.TOMBSTONE_TEXT
    forgets = _forget_records(ours, theirs, result)
    b, o, t = by_scope(base), by_scope(ours), by_scope(theirs)
    for scope in sorted(set(o) | set(t)):
        merged = _merge_scope(scope, b.get(scope, {}), o.get(scope, {}), t.get(scope, {}), result)
        merged = _bury(scope, merged, graves, result)
        merged = _keep_forgotten_out(scope, merged, forgets, result)
        if awaits_rebuild(merged):
            result.reconsolidate.add(scope)
        for rel, data in merged.items():
            result.files[f"{scope}/{rel}"] = data
    return result


def _merge_scope(
    scope: str, base: dict[str, bytes], ours: dict[str, bytes], theirs: dict[str, bytes], result: MergeResult
) -> dict[str, bytes]:
    if ours == theirs or theirs == base:
        return dict(ours)
    if ours == base:
        return dict(theirs)
    result.combined.add(scope)
    result.reconsolidate.add(scope)
    merged = {rel: data for rel, data in theirs.items() if not is_input_path(rel)}
    summaries = {rel for rel in set(base) | set(ours) | set(theirs) if rel.startswith(f"{ROLLOUT_DIR}/")}
    for rel in sorted(summaries):
        chosen = _three_way(base.get(rel), ours.get(rel), theirs.get(rel))
        if chosen is not None:
            merged[rel] = chosen
    merged[RAW_MEMORIES] = _raw_union(ours, theirs, set(merged))
    return merged


def awaits_rebuild(files: Mapping[str, bytes]) -> bool:
    """A scope (``rel -> bytes``) whose digest is the placeholder a forget left and that still has
    inputs: whichever machine merges it rebuilds it from the inputs it has, in the same sync (a
    fast-forward onto another machine's forget included), so no agent reads an emptied memory."""
    return files.get(SUMMARY) in PLACEHOLDERS and any(rel.startswith(f"{ROLLOUT_DIR}/") for rel in files)


def _three_way(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> bytes | None:
    """One input file: a side's change wins over no change; both changed: this machine's (it
    writes its own inputs again anyway), or the one that still has it."""
    if ours == theirs:
        return ours
    if ours == base:
        return theirs
    if theirs == base:
        return ours
    return ours if ours is not None else theirs


def _raw_union(ours: dict[str, bytes], theirs: dict[str, bytes], kept: set[str]) -> bytes:
    sections = []
    for side in (ours, theirs):
        text = side.get(RAW_MEMORIES, b"").decode("utf-8", "replace")
        sections += [s for s in raw_sections(text) if s.file in kept]
    return join_raw_sections(sections).encode("utf-8")


def _bury(scope: str, files: dict[str, bytes], graves: set[str], result: MergeResult) -> dict[str, bytes]:
    """``files`` of ``scope`` without what tombstoned sessions taught (``pipeline.memory.burial``)."""
    if not graves:
        return files
    buried = bury_scope(files, graves)
    out = buried.files
    result.removed_inputs += len(buried.dropped)
    if buried.withdrawn:
        result.withdrawn[scope] = buried.withdrawn
        result.reconsolidate.add(scope)
    if (buried.dropped or buried.withdrawn) and not any(rel.startswith(f"{ROLLOUT_DIR}/") for rel in out):
        result.cleared.add(scope)
        result.reconsolidate.discard(scope)
        return {}
    if buried.dropped:
        result.reconsolidate.add(scope)
    return out


def _forget_records(ours: Files, theirs: Files, result: MergeResult) -> list[ForgottenTopic]:
    """Both sides' forget records (``forgotten/``), all kept in the merged tree: a record is never
    dropped."""
    for side in (theirs, ours):
        result.files.update(forget_records.record_files(side))
    return forget_records.records_in(result.files)


def _keep_forgotten_out(
    scope: str, files: dict[str, bytes], forgets: list[ForgottenTopic], result: MergeResult
) -> dict[str, bytes]:
    """``files`` of ``scope`` without the memories a person forgot, on either machine, whatever side
    holds them (the topic, its index line, its text in the inputs; the digest becomes the
    placeholder): a merge never brings one back."""
    kept, removed = forget_records.scrub_scope(files, forget_records.of_scope(forgets, scope))
    if removed:
        result.forgotten.setdefault(scope, []).extend(removed)
        if any(rel.startswith(f"{ROLLOUT_DIR}/") for rel in kept):
            result.reconsolidate.add(scope)
    return kept
