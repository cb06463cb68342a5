"""`memd status`'s report drawn for the terminal (``daemon.cli.status`` draws the rest): the longer lists
as plain padded columns (the publish targets, the memory use per scope, the flagged topics), a memory's
id with its folders, an agent in words.

A rich ``Table`` costs about a millisecond a row and these lists grow with the scopes, so they are
padded by hand (``plain_table``); the JSON report has every field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from daemon.cli.text import ABSENT, format_table, shown, when
from pipeline.status.agents import NOT_INSTALLED
from pipeline.status.report import AgentView, Flagged, Publish, Unreadable, Usage

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["agent_line", "flagged_table", "plain_table", "publish_table", "usage_table", "with_folders"]


def publish_table(console: Console, section: Publish | Unreadable) -> None:
    """Each target and scope: last published, outcome and reason, the last republish after an outside change."""
    if isinstance(section, Unreadable) or not section.targets:
        return
    header = (
        "target",
        "scope",
        "outcome",
        "project folder",
        "last published",
        "republished (outside change)",
        "reason",
    )
    rows = [
        (
            shown(t.target),
            shown(t.scope),
            shown(t.outcome),
            in_folders(t.folders),
            when(t.published_at),
            when(t.republished_at) if t.republished_at else ABSENT,
            shown(t.reason),
        )
        for t in section.targets
    ]
    plain_table(console, "publish targets", header, rows, keep=3)


def in_folders(folders: list[str]) -> str:
    """A scope's project folders, shown beside its key (``-`` for one that has none: ``global``)."""
    return ", ".join(shown(f) for f in folders) if folders else ABSENT


def usage_table(console: Console, section: Usage | Unreadable) -> None:
    """Per scope: the hit rate (sessions that used a topic file), what agents said of its topics
    (helped / misled), and the use counts."""
    if isinstance(section, Unreadable):
        console.print(f"memory use: {section.error}", markup=False)
        return
    if not section.scopes:
        console.print("memory use: nothing published yet", markup=False)
        return
    header = (
        "scope",
        "hit rate",
        "helped / misled",
        "sessions using",
        "given",
        "topics read",
        "uses",
        "last use",
        "memories used",
        "project folder",
    )
    rows = [
        (
            shown(s.scope),
            ABSENT if s.hit_rate is None else f"{100 * s.hit_rate:.0f}%",
            f"{s.helped} / {s.misled}",
            f"{s.sessions_reading} of {s.sessions}",
            str(s.sessions_given),
            f"{s.topics_read} of {s.topics_published}",
            str(s.uses),
            when(s.last_used_at),
            f"{s.memories.used} of {s.memories.live} ({s.memories.use_count} uses)",
            in_folders(s.folders),
        )
        for s in section.scopes
    ]
    plain_table(console, f"memory use (last {section.window_days} days)", header, rows, left=1, keep=3)


def plain_table(
    console: Console,
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    left: int = 0,
    keep: int | None = None,
) -> None:
    """A title, a bold header and the rows, padded by hand (``format_table``): fitted to the
    console's width on a terminal (the first ``keep`` columns stay a table), never wrapped elsewhere."""
    from rich.text import Text

    width = console.width if console.is_terminal else None
    head, *body = format_table(header, rows, left=left, width=width, keep=keep)
    console.print(Text(title))
    console.print(Text(head, style="bold"), soft_wrap=True)
    console.print(Text("\n".join(body)), soft_wrap=True)


def flagged_table(console: Console, section: list[Flagged] | Unreadable | None) -> None:
    """The flagged topics, when there is any (nothing printed otherwise)."""
    if isinstance(section, Unreadable):
        console.print(f"flagged by agents: {section.error}", markup=False)
        return
    if not section:
        return
    rows = [(with_folders(f.id, f.folders), f.verdict, when(f.at), shown(f.note)) for f in section]
    plain_table(
        console,
        "flagged by agents (fixed or dropped at the next consolidation)",
        ("memory", "verdict", "when", "note"),
        rows,
    )


def with_folders(topic_id: str, folders: list[str]) -> str:
    """A memory's id with its scope's project folders beside it, as `memd memories show` writes it
    (the id alone when its scope has none: ``global``)."""
    return f"{topic_id} ({', '.join(shown(f) for f in folders)})" if folders else topic_id


def agent_line(view: AgentView) -> str:
    """One agent in words, for the terminal."""
    if not view.targets:
        return f"{view.label}: nothing published for it" + ("" if view.installed else f" ({NOT_INSTALLED})")
    if not view.installed:
        return f"{view.label}: {NOT_INSTALLED} ({view.home} is absent)"
    return f"{view.label}: " + ", ".join(f"{t.target} {t.state}" for t in view.targets)
