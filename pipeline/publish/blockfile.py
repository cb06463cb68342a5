"""memd's block in a single instructions file (``CLAUDE.md``, ``GEMINI.md``, ``AGENTS.md``).

The block holds the scope's digest and index; its index lines point at the topic files in the
memory repository's working tree (read-only to the agent, always there). Everything outside the
sentinels is the user's and is kept byte for byte. The file must stay inside ``within`` (a
project's ``AGENTS.md`` inside the project); a user-level file (``follow_link``) may be a symlink
to a regular file the same user owns. Broken sentinels are repaired only when the block is, byte
for byte, what memd last wrote (``previous_sha``), else refused with the file's name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.layout import SUMMARY
from pipeline.publish import sentinel
from pipeline.publish.atomic import decode, encode
from pipeline.publish.memfiles import ScopeMemory
from pipeline.publish.plan import Plan, digest_of, missing_home, read_bytes
from pipeline.publish.render import Budget, render_body

BLOCK_BUDGET = Budget(max_lines=80, max_bytes=8_000)
"""Instruction files load whole: memd keeps its block small."""
BLOCK_KEY = "block"
GLOBAL_TITLE = "Memory across projects"


def plan_block_file(
    target: str,
    scope: ScopeMemory,
    path: Path,
    *,
    title: str,
    previous_sha: str | None,
    budget: Budget = BLOCK_BUDGET,
    within: Path | None = None,
    follow_link: bool = False,
    tools: str | None = None,
) -> Plan:
    plan = Plan(target=target, scope=scope.scope, location=path)
    if not plan.confine(within or path.parent, path, follow_link=follow_link):
        return plan
    current_raw = read_bytes(path)
    current = decode(current_raw) if current_raw is not None else None
    plan.disk_digest = digest_of({BLOCK_KEY: sentinel.block_body(current) or ""})
    body = render_body(
        scope,
        title=title,
        where=f"Topic files: {scope.path}/ (read-only; open one when its line is relevant).",
        link_for=lambda t: str(t.path),
        budget=budget,
        summary_source=str(scope.path / SUMMARY),
        tools=tools,
    )
    if body is None:  # pragma: no cover - the fixed budget always fits the header
        plan.skip_reason = "memd's block does not fit its budget"
        return plan
    edit = sentinel.replace_block(current, body, trusted=_trusted(previous_sha))
    if not edit.ok:
        plan.refused = f"{path}: {edit.problem}"
        return plan
    assert edit.text is not None
    if edit.repaired:
        plan.disk_digest = digest_of({BLOCK_KEY: edit.old_body or ""})
        plan.notes.append(sentinel.repaired_note(path))
    plan.change(path, encode(edit.text), current_raw)
    plan.digest = digest_of({BLOCK_KEY: body})
    plan.published = {str(t.path): (scope.scope, t.file) for t in scope.topics}
    if previous_sha is not None and plan.disk_digest != previous_sha:
        plan.outside_change = True
        plan.notes.append("memd's block there was changed by someone else since the last publish")
    return plan


def plan_block_withdraw(
    target: str,
    scope: str,
    path: Path,
    *,
    previous_sha: str | None,
    within: Path | None = None,
    follow_link: bool = False,
) -> Plan:
    """Empty memd's block (the scope is gone)."""
    plan = Plan(target=target, scope=scope, location=path, withdraw=True)
    if not plan.confine(within or path.parent, path, follow_link=follow_link):
        return plan
    current_raw = read_bytes(path)
    current = decode(current_raw) if current_raw is not None else None
    if current:
        edit = sentinel.replace_block(current, "", trusted=_trusted(previous_sha))
        if not edit.ok:
            plan.refused = f"{path}: {edit.problem}"
            return plan
        if edit.repaired:
            plan.notes.append(sentinel.repaired_note(path))
        if edit.old_body and edit.text is not None:
            plan.change(path, encode(edit.text), current_raw)
    plan.digest = digest_of({BLOCK_KEY: ""})
    return plan


def _trusted(previous_sha: str | None) -> Callable[[str], bool] | None:
    """Whether a block body is the one memd last wrote (known by its digest)."""
    if previous_sha is None:
        return None
    return lambda body: digest_of({BLOCK_KEY: body}) == previous_sha


def plan_user_file(
    target: str,
    scope: ScopeMemory,
    home: Path,
    name: str,
    *,
    agent: str,
    previous_sha: str | None,
    tools: str | None = None,
) -> Plan:
    """The global scope in memd's block of the user-level file ``home/name`` of an agent (its global
    ``CLAUDE.md``, ``GEMINI.md``, ``AGENTS.md``...), which may be a symlink to a regular file the user
    owns; skipped while the agent's home does not exist."""
    if (absent := missing_home(target, scope.scope, home, agent)) is not None:
        return absent
    return plan_block_file(
        target,
        scope,
        home / name,
        title=GLOBAL_TITLE,
        previous_sha=previous_sha,
        follow_link=True,
        tools=tools,
    )


def withdraw_user_file(target: str, scope: str, path: Path, *, previous_sha: str | None) -> Plan:
    """memd's block taken out of a user-level file (``plan_user_file``)."""
    return plan_block_withdraw(target, scope, path, previous_sha=previous_sha, follow_link=True)
