"""Codex: ``$CODEX_HOME/memories/`` (one folder for every project), and the global scope in
``$CODEX_HOME/AGENTS.md``.

Codex (0.169, ``[features] memories = true``) injects ``memory_summary.md`` verbatim into every
session, up to its token cap, and only names ``MEMORY.md``. memd writes one ``memory_summary.md``:
the global digest, then one section per project labelled with its path, most recently active
first, within ``publish.codex_summary_token_cap``; ``MEMORY.md`` indexes every topic file, which
memd writes beside it as ``memd-<scope label>--<file>``. Codex's own consolidation may rewrite the
folder: memd compares what is there with what it last wrote, publishes again and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.agents.codex import NAME
from pipeline.layout import GLOBAL_SCOPE, INDEX, SUMMARY
from pipeline.publish.atomic import encode
from pipeline.publish.blockfile import (
    plan_user_file,
    withdraw_user_file,
)
from pipeline.publish.folder import memd_files
from pipeline.publish.memfiles import ScopeMemory, Topic
from pipeline.publish.plan import Homes, Plan, PublishContext, digest_of, missing_home, read_bytes
from pipeline.publish.render import (
    VERIFY_NOTE,
    approx_tokens,
    clean_summary,
    index_line,
    neutralise,
    newest_update,
    topic_copy,
)
from pipeline.publish.targets.base import PublishTarget, nothing_to_withdraw, user_file_folder
from pipeline.publish.targets.limits import token_cap
from pipeline.settings import PublishSettings
from pipeline.store.publications import Publication

TARGET = "codex"
TARGET_GLOBAL = "codex_global"
GLOBAL_FILE = "AGENTS.md"
AGENT = "Codex"
PREFIX = "memd-"
GLOBAL_SHARE = 0.4
"""At most this share of the summary's token cap goes to the global digest when projects follow."""
OUTSIDE_CHANGE = "changed outside memd since the last publish (Codex's own consolidation?): published again"


def label(scope: str) -> str:
    return GLOBAL_SCOPE if scope == GLOBAL_SCOPE else scope.removeprefix("projects/")


def topic_name(scope: str, topic: Topic) -> str:
    return f"{PREFIX}{label(scope)}--{topic.file}"


def codex_home(homes: Homes) -> Path:
    """``$CODEX_HOME`` (``~/.codex``): the parent of Codex's transcripts root."""
    return homes.root(NAME).parent


def memories_dir(home: Path) -> Path:
    return home / "memories"


def _scope_files(folder: Path, scope: str, existing: dict[str, bytes | None]) -> dict[str, bytes | None]:
    prefix = f"{PREFIX}{label(scope)}--"
    files = {name: data for name, data in existing.items() if name.startswith(prefix)}
    if scope == GLOBAL_SCOPE:
        files[SUMMARY] = read_bytes(folder / SUMMARY)
        files[INDEX] = read_bytes(folder / INDEX)
    return files


def _section_title(ctx: PublishContext, scope: ScopeMemory) -> str:
    if scope.scope == GLOBAL_SCOPE:
        return f"## Global (newest memory updated {newest_update(scope)})"
    project = ctx.projects.get(scope.scope) or scope.scope
    active = ctx.activity.get(scope.scope)
    when = f"last active {active.date().isoformat()}; " if active else ""
    return f"## Project: {project} ({when}newest memory updated {newest_update(scope)})"


def _order(ctx: PublishContext, projects: Sequence[ScopeMemory]) -> list[ScopeMemory]:
    def key(s: ScopeMemory) -> tuple[float, str]:
        active = ctx.activity.get(s.scope)
        return (active.timestamp() if active else float("-inf"), s.scope)

    return sorted(projects, key=key, reverse=True)


def render_summary(ctx: PublishContext, global_scope: ScopeMemory, projects: Sequence[ScopeMemory]) -> str:
    """The digest Codex injects: global first, then projects by last activity, within the token cap
    (the model's markers neutralised)."""
    return neutralise(_summary(ctx, global_scope, projects))


def _summary(ctx: PublishContext, global_scope: ScopeMemory, projects: Sequence[ScopeMemory]) -> str:
    cap = token_cap(TARGET, ctx.publish.number("codex_summary_token_cap"))
    head = [
        "v1",
        "# Memory from memd",
        f"{VERIFY_NOTE} The index is {INDEX} in this folder; topic files are {PREFIX}*.md beside it "
        "(open one when its index line is relevant to the task).",
    ]
    text = "\n".join(head) + "\n"
    ordered = [global_scope, *_order(ctx, projects)]
    sections = [s for s in ordered if clean_summary(s.summary) or s.topics]
    for i, scope in enumerate(sections):
        left = len(sections) - i - 1
        trailer = f"\n({left} more projects: see {INDEX})\n" if left else ""
        lines = clean_summary(scope.summary) or [
            f"(no digest yet; {len(scope.topics)} topic files in {INDEX})"
        ]
        section = f"\n{_section_title(ctx, scope)}\n"
        # The global digest leaves most of the room to the projects, which a session needs more.
        limit = approx_tokens(text) + int(cap * GLOBAL_SHARE) if scope.scope == GLOBAL_SCOPE and left else cap
        taken = 0
        for line in lines:
            if approx_tokens(text + section + line + "\n" + _trailer_room(trailer)) > min(limit, cap):
                break
            section += line + "\n"
            taken += 1
        if taken == 0:
            more = len(sections) - i
            tail = f"\n({more} more projects: see {INDEX})\n" if scope.scope != GLOBAL_SCOPE else ""
            if tail and approx_tokens(text + tail) <= cap:
                text += tail
            break
        if taken < len(lines):
            section += "(shortened to fit; more in the topic files)\n"
        text += section
    return text


def _trailer_room(trailer: str) -> str:
    return trailer + "(shortened to fit; more in the topic files)\n"


def render_index(ctx: PublishContext, scopes: Sequence[ScopeMemory]) -> str:
    lines = ["# memd memory index", "", VERIFY_NOTE]
    for scope in scopes:
        if not scope.topics:
            continue
        lines += ["", _section_title(ctx, scope)]
        lines += [index_line(t, topic_name(scope.scope, t)) for t in scope.topics]
    return neutralise("\n".join(lines) + "\n")


def plan_all(
    ctx: PublishContext, scopes: Sequence[ScopeMemory], previous: Mapping[str, str | None]
) -> list[Plan]:
    """One plan per scope (the global one also carries the summary, the index and stale removals)."""
    if (absent := missing_home(TARGET, GLOBAL_SCOPE, codex_home(ctx.homes), AGENT)) is not None:
        return [absent]
    home = codex_home(ctx.homes)
    folder = memories_dir(home)
    guard = Plan(target=TARGET, scope=GLOBAL_SCOPE, location=folder)
    if not guard.confine(home, folder / INDEX):
        return [guard]
    global_scope = next(
        (s for s in scopes if s.scope == GLOBAL_SCOPE),
        ScopeMemory(scope=GLOBAL_SCOPE, path=folder, summary="", index="", topics=()),
    )
    projects = [s for s in scopes if s.scope != GLOBAL_SCOPE]
    ordered = [global_scope, *_order(ctx, projects)]
    existing = memd_files(folder)
    plans: list[Plan] = []
    wanted: set[str] = set()
    for scope in ordered:
        plan = Plan(target=TARGET, scope=scope.scope, location=folder, within=home)
        desired: dict[str, bytes | None] = {
            topic_name(scope.scope, t): encode(topic_copy(t)) for t in scope.topics
        }
        if scope.scope == GLOBAL_SCOPE:
            desired[SUMMARY] = encode(render_summary(ctx, global_scope, projects))
            desired[INDEX] = encode(render_index(ctx, ordered))
        on_disk = _scope_files(folder, scope.scope, existing)
        for name, data in desired.items():
            plan.change(folder / name, data, on_disk[name] if name in on_disk else read_bytes(folder / name))
        wanted.update(desired)
        plan.digest = digest_of(desired)
        plan.disk_digest = digest_of(on_disk)
        plan.published = {
            str(folder / topic_name(scope.scope, t)): (scope.scope, t.file) for t in scope.topics
        }
        if scope.scope == GLOBAL_SCOPE:
            plan.published[str(folder / SUMMARY)] = (GLOBAL_SCOPE, SUMMARY)
            plan.published[str(folder / INDEX)] = (GLOBAL_SCOPE, INDEX)
        prev = previous.get(scope.scope)
        if prev is not None and plan.disk_digest != prev:
            # What memd last wrote is not what is there: someone else changed it.
            plan.outside_change = True
            plan.notes.append(OUTSIDE_CHANGE)
        if not plan.confine(home, *(folder / name for name in desired)):
            return [plan]
        plans.append(plan)
    stale = {name: data for name, data in existing.items() if name not in wanted}
    for name, data in stale.items():
        plans[0].change(folder / name, None, data)
    return plans


def plan_withdraw_all(ctx: PublishContext, rows: Mapping[str, Publication]) -> Plan:
    """The Codex target was turned off: remove every file memd put in the memories folder. The
    summary and the index carry Codex's own names, so they go only while they are exactly what
    memd last wrote (Codex's consolidation may have made them its own since)."""
    home = codex_home(ctx.homes)
    folder = memories_dir(home)
    plan = Plan(target=TARGET, scope=GLOBAL_SCOPE, location=folder, withdraw=True)
    if not plan.confine(home, folder / INDEX):
        return plan
    existing = memd_files(folder)
    for name, data in existing.items():
        plan.change(folder / name, None, data)
    row = rows.get(GLOBAL_SCOPE)
    shared = {SUMMARY: read_bytes(folder / SUMMARY), INDEX: read_bytes(folder / INDEX)}
    if row is not None and row.content_sha256 == digest_of(_scope_files(folder, GLOBAL_SCOPE, existing)):
        for name, data in shared.items():
            plan.change(folder / name, None, data)
    elif any(data is not None for data in shared.values()):
        plan.notes.append(
            f"{SUMMARY} and {INDEX} were changed since memd wrote them (by Codex?): left in place"
        )
    plan.digest = digest_of({})
    return plan


class Codex(PublishTarget):
    """``[publish] codex``: every scope in ``$CODEX_HOME/memories`` (planned together: one summary
    and one index serve them all); ``codex_global``: the global scope in ``$CODEX_HOME/AGENTS.md``.
    ``$CODEX_HOME`` is the parent of Codex's transcripts root."""

    project_name = TARGET
    global_name = TARGET_GLOBAL

    def enabled(self, publish: PublishSettings) -> frozenset[str]:
        return self._on(project=publish.on(TARGET), global_=publish.on(TARGET_GLOBAL))

    def folders(self, homes: Homes, names: frozenset[str], projects: Sequence[str]) -> list[Path]:
        """Its ``memories`` folder; the home itself only for the global ``AGENTS.md``."""
        home = codex_home(homes)
        wanted = {TARGET: memories_dir(home), TARGET_GLOBAL: user_file_folder(home / GLOBAL_FILE)}
        return [folder for name, folder in wanted.items() if name in names]

    def plan_projects(
        self, ctx: PublishContext, scopes: Sequence[ScopeMemory], previous: Mapping[str, str | None]
    ) -> list[Plan]:
        return plan_all(ctx, scopes, previous)

    def plan_global(self, ctx: PublishContext, scope: ScopeMemory, previous_sha: str | None) -> Plan:
        return plan_user_file(
            TARGET_GLOBAL,
            scope,
            codex_home(ctx.homes),
            GLOBAL_FILE,
            agent=AGENT,
            previous_sha=previous_sha,
            tools=ctx.mcp.note(NAME),
        )

    def plan_withdrawal(self, ctx: PublishContext, row: Publication, rows: Mapping[str, Publication]) -> Plan:
        """The memories folder is withdrawn as a whole, with its global row: while Codex is on,
        that row is always planned, so withdrawing it means the target was turned off. Another
        scope's files went with the global plan that dropped them (or go with that withdrawal)."""
        if row.target == TARGET:
            if row.scope == GLOBAL_SCOPE:
                return plan_withdraw_all(ctx, rows)
            return nothing_to_withdraw(row)
        return super().plan_withdrawal(ctx, row, rows)

    def withdraw(self, ctx: PublishContext, row: Publication, location: Path) -> Plan:
        return withdraw_user_file(row.target, row.scope, location, previous_sha=row.content_sha256)
