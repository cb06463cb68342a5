"""Tables fit the terminal they are shown on, never cut a value (an id, a path, a URL), and are not
fitted or wrapped at all when stdout is not a terminal."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from daemon.cli import scan as scan_cli
from daemon.cli.status_tables import plain_table, publish_table
from daemon.cli.text import format_table
from pipeline.scan.view import ScanReport
from pipeline.status.record import replace
from pipeline.status.report import Publish, TargetView
from pipeline.store.read.sessions import SessionRecord

TWINS = ("0198a7c2-1111-7000-8000-aaaaaaaaaaaa", "0198a7c2-1111-7000-8000-bbbbbbbbbbbb")
URL = "https://github.com/example/project/issues/12345#issuecomment-9876543210"


def _session(session_id: str, reason: str) -> SessionRecord:
    return SessionRecord(
        id=1,
        source="claude_code",
        path=f"/home/dev/.claude/projects/-home-dev-src-some-long-project-name/{session_id}.jsonl",
        session_id=session_id,
        project="/home/dev/src/some-long-project-name",
        user_messages=12,
        last_activity=datetime.now(UTC) - timedelta(hours=3),
        subagent=False,
        external_context=(),
        state="eligible",
        reason=reason,
        eligible_at=None,
    )


def _report() -> ScanReport:
    sessions = [_session(TWINS[0], f"idle, see {URL}"), _session(TWINS[1], "idle for 3h of 2h")]
    return ScanReport(
        sessions=sessions,
        files_seen=2,
        by_source={"claude_code": {"eligible": 2}},
        notable_sessions=sessions,
    )


@pytest.mark.parametrize("width", [80, None])
def test_scan_shows_whole_session_ids_that_never_read_the_same(
    width: int | None, capsys: pytest.CaptureFixture[str]
) -> None:
    scan_cli._print(_report(), False, width=width)
    out = capsys.readouterr().out
    for session_id in TWINS:
        assert session_id in out
    assert URL in out  # never split
    lines = out.splitlines()
    if width is not None:  # only a value longer than the width is longer, alone on its line
        too_long = [line for line in lines if len(line) > width]
        assert [line.strip() for line in too_long] == [f"reason: idle, see {URL}"], too_long
    else:  # not a terminal: one line per session, whatever its length
        assert any(TWINS[0] in line and URL in line for line in lines)


def test_a_table_too_wide_for_the_terminal_keeps_its_first_columns_and_stacks_the_rest() -> None:
    header = ("id", "state", "project", "reason")
    rows = [
        ("a1", "eligible", "/home/dev/src/p", f"see {URL}"),
        ("b2", "failed", "/home/dev/src/q", "API error"),
    ]
    wide = format_table(header, rows)
    assert len(wide) == 3  # no width: the plain table
    fitted = format_table(header, rows, width=60, keep=2)
    assert all(len(line) <= 60 for line in fitted if URL not in line)
    assert any(
        line.strip() == f"reason: see {URL}" for line in fitted
    )  # a value longer than the width: whole
    assert fitted[0].split() == ["id", "state"]
    assert fitted[1].split()[:2] == ["a1", "eligible"]
    assert "project: /home/dev/src/p" in fitted[2]
    assert format_table(header, rows, width=200, keep=2) == wide  # it fits: unchanged


def _publish_section() -> Publish:
    target = TargetView(
        target="claude_code",
        scope="projects/some-long-project-name-e3b8fe59",
        path=None,
        published_at="2026-11-01T12:00:00+00:00",
        outcome="skipped",
        reason=f"Claude Code is not set up for this user ({URL})",
        republished_at=None,
        republish_reason=None,
        folders=["/home/dev/some-long-project-name"],
    )
    return Publish(last_run=None, targets=[target, replace(target, target="agents_md")])


def test_status_tables_fit_a_terminal_of_80_columns() -> None:
    out = io.StringIO()
    publish_table(Console(file=out, width=80, force_terminal=True, color_system=None), _publish_section())
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines if URL not in line), out.getvalue()
    assert sum(URL in line for line in lines) == 2


def test_status_tables_are_not_wrapped_when_stdout_is_not_a_terminal() -> None:
    out = io.StringIO()
    plain_table(
        Console(file=out, width=80, force_terminal=False), "t", ("a", "b"), [("x" * 70, f"see {URL}")]
    )
    [_, _, row] = out.getvalue().splitlines()
    assert row.split() == ["x" * 70, "see", URL]
