"""An agent's memory folder (Claude Code, Gemini CLI): memd's topic files and its block in ``MEMORY.md``.

memd's topic files carry its own prefix (``memd-*.md``) so they never collide with the agent's;
files with the prefix that no longer match a topic are removed. memd's part of ``MEMORY.md`` is a
sentinel block sized so that the whole file, the agent's own lines included, stays inside the
load cut with room left for the agent to add lines of its own. Every file stays inside the agent's
home (``within``), reached without a symlink; broken sentinels in ``MEMORY.md`` are repaired only
when memd's files and block are exactly what it last wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.layout import INDEX, SUMMARY
from pipeline.publish import sentinel
from pipeline.publish.atomic import decode, encode
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Plan, digest_of, read_bytes
from pipeline.publish.render import Budget, render_body, topic_copy

PREFIX = "memd-"
BLOCK_KEY = "MEMORY.md#memd"


@dataclass(frozen=True)
class LoadCut:
    """What the agent loads of ``MEMORY.md`` and how much of it memd may take."""

    max_lines: int = 200
    max_bytes: int = 25_000
    block_max_lines: int = 120
    block_max_bytes: int = 15_000
    headroom_lines: int = 20
    """Lines kept free for the agent's own future entries."""
    headroom_bytes: int = 2_000

    def body_budget(self, base_text: str) -> Budget:
        """The budget for memd's body given the file as it would be with an empty block."""
        lines = sentinel.count_lines(base_text)
        size = len(encode(base_text))
        return Budget(
            max_lines=min(self.block_max_lines, self.max_lines - self.headroom_lines - lines),
            max_bytes=min(self.block_max_bytes, self.max_bytes - self.headroom_bytes - size),
        )


def memd_files(folder: Path) -> dict[str, bytes | None]:
    """memd's topic files now in ``folder`` (``memd-*.md``; a symlink is never memd's and is passed
    over, anything else that is not a regular file raises ``safefile.UnsafeFile``)."""
    found: dict[str, bytes | None] = {}
    try:
        children = list(folder.iterdir())
    except OSError:
        return found
    for path in children:
        if path.name.startswith(PREFIX) and path.name.endswith(".md") and not path.is_symlink():
            found[path.name] = read_bytes(path)  # a FIFO, a device or a folder: UnsafeFile
    return found


def plan_folder(
    target: str,
    scope: ScopeMemory,
    folder: Path,
    *,
    title: str,
    cut: LoadCut,
    previous_sha: str | None,
    within: Path,
    tools: str | None = None,
) -> Plan:
    plan = Plan(target=target, scope=scope.scope, location=folder)
    index_path = folder / INDEX
    if not plan.confine(within, index_path):
        return plan
    current_raw = read_bytes(index_path)
    current = decode(current_raw) if current_raw is not None else None
    existing = memd_files(folder)
    plan.disk_digest = digest_of({BLOCK_KEY: sentinel.block_body(current) or "", **existing})

    trusted = _trusted(previous_sha, existing)
    base = sentinel.replace_block(current, "", trusted=trusted)
    if not base.ok:
        plan.refused = f"{index_path}: {base.problem}"
        return plan
    assert base.text is not None
    if base.repaired:
        plan.disk_digest = digest_of({BLOCK_KEY: base.old_body or "", **existing})
        plan.notes.append(sentinel.repaired_note(index_path))
    body = render_body(
        scope,
        title=title,
        where=f"Topic files: {folder}/{PREFIX}*.md (open one when its line is relevant).",
        link_for=lambda t: PREFIX + t.file,
        budget=cut.body_budget(base.text),
        summary_source=str(scope.path / SUMMARY),
        tools=tools,
    )
    desired: dict[str, bytes | None] = {PREFIX + t.file: encode(topic_copy(t)) for t in scope.topics}
    if not plan.confine(within, index_path, *(folder / name for name in desired)):
        return plan
    if body is None:
        plan.skip_reason = (
            f"{index_path} has {sentinel.count_lines(base.text)} lines / {len(encode(base.text))} bytes outside "
            f"memd's block: no room inside the {cut.max_lines}-line / {cut.max_bytes}-byte load cut"
        )
        body, desired = "", {}
    edit = sentinel.replace_block(current, body, trusted=trusted)
    assert edit.text is not None
    # A file that had no block and gets an empty one is left alone.
    if not (body == "" and current is not None and edit.old_body is None):
        plan.change(index_path, encode(edit.text), current_raw)
    for name, data in desired.items():
        plan.change(folder / name, data, existing.get(name))
    for name, old in existing.items():
        if name not in desired:
            plan.change(folder / name, None, old)
    plan.digest = digest_of({BLOCK_KEY: body, **desired})
    plan.published = {str(folder / (PREFIX + t.file)): (scope.scope, t.file) for t in scope.topics if desired}
    if body:
        plan.published[str(index_path)] = (scope.scope, INDEX)
    if previous_sha is not None and plan.disk_digest != previous_sha:
        plan.outside_change = True
        plan.notes.append("memd's files or block there were changed by someone else since the last publish")
    return plan


def plan_withdraw(target: str, scope: str, folder: Path, *, previous_sha: str | None, within: Path) -> Plan:
    """Empty memd's block and remove its topic files (the scope is gone from the repository, or
    memd may no longer publish there)."""
    plan = Plan(target=target, scope=scope, location=folder, withdraw=True)
    index_path = folder / INDEX
    if not plan.confine(within, index_path):
        return plan
    current_raw = read_bytes(index_path)
    current = decode(current_raw) if current_raw is not None else None
    existing = memd_files(folder)
    if current:
        edit = sentinel.replace_block(current, "", trusted=_trusted(previous_sha, existing))
        if not edit.ok:
            plan.refused = f"{index_path}: {edit.problem}"
            return plan
        if edit.repaired:
            plan.notes.append(sentinel.repaired_note(index_path))
        if edit.old_body and edit.text is not None:
            plan.change(index_path, encode(edit.text), current_raw)
    for name, data in existing.items():
        plan.change(folder / name, None, data)
    plan.digest = digest_of({BLOCK_KEY: ""})
    return plan


def _trusted(previous_sha: str | None, existing: dict[str, bytes | None]) -> Callable[[str], bool] | None:
    """Whether a block body, with memd's files as they are, is what memd last wrote (by its digest)."""
    if previous_sha is None:
        return None
    return lambda body: digest_of({BLOCK_KEY: body, **existing}) == previous_sha
