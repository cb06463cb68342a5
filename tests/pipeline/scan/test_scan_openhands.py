"""OpenHands conversations through the scanner: one row per conversation folder, its project the
repository its working directory is in, idle time from its events, a folder that did not change
costing no read, an added event read at the next scan, a hostile folder recorded with its reason."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

from pipeline.clock import FakeClock
from pipeline.scan.scanner import scan
from pipeline.settings import Settings
from pipeline.sources import registry
from pipeline.store import Store
from tests.pipeline.sources.openhands_support import agent_says, append_events, user, write_conversation
from tests.source_names import SourceName


def _settings(base: Path) -> Settings:
    """OpenHands only, at ``base/openhands``."""
    sources = {
        name: {"root": str(base / name), "enabled": name == SourceName.OPENHANDS} for name in registry.names()
    }
    paths = {"memory_dir": str(base / "mem"), "state_db": "sqlite:///x", "state_dir": str(base / "st")}
    return Settings.model_validate(
        {"paths": paths, "sources": sources, "memories": {"include_non_interactive": True}}
    )


def _local(at: datetime) -> str:
    """``at`` as OpenHands writes a time: local, without a zone."""
    return at.astimezone().replace(tzinfo=None).isoformat(timespec="seconds")


async def test_conversations_are_scanned_read_once_and_read_again_when_they_grow(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    repo = tmp_path / "work" / "app"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    root = tmp_path / "openhands"
    idle = write_conversation(
        root,
        [user("fix the build"), agent_says("Fixed.")],
        cwd=str(repo / "sub"),
        conv="a" * 32,
        start=_local(clock.now() - timedelta(hours=9)),
    )
    write_conversation(
        root,
        [user("add a test")],
        cwd=str(repo),
        conv="b" * 32,
        start=_local(clock.now() - timedelta(minutes=30)),
    )
    elsewhere = write_conversation(tmp_path / "elsewhere", [user("not here")], conv="d" * 32)
    (root / ("c" * 32)).symlink_to(elsewhere)

    settings = _settings(tmp_path)
    report = await scan(store, settings, clock)
    by_path = {Path(s.path).name: s for s in report.sessions}
    assert set(by_path) == {"a" * 32, "b" * 32, "c" * 32}
    first = by_path["a" * 32]
    assert (first.source, first.project, first.session_id, first.user_messages, first.state) == (
        "openhands",
        str(repo),
        "a" * 32,
        1,
        "eligible",
    )
    assert by_path["b" * 32].state == "active"
    assert by_path["c" * 32].state == "unreadable"
    assert "symbolic link" in (by_path["c" * 32].reason or "")

    again = await scan(store, settings, clock)
    assert again.files_parsed == 0  # nothing changed: one look at each folder, no event read

    key = os.stat(idle / "events").st_mtime_ns
    append_events(idle, [user("and the docs")], start=_local(clock.now() - timedelta(hours=8)))
    os.utime(idle / "events", ns=(key + 10**9, key + 10**9))
    grown = await scan(store, settings, clock)
    assert grown.files_parsed == 1
    (row,) = [s for s in grown.sessions if Path(s.path).name == "a" * 32]
    assert row.user_messages == 2
