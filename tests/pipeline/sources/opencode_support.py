"""OpenCode databases for tests, built from the real ones: the database the CLI wrote (its schema
and its session), the sub-agent and compaction sessions it wrote in other runs (rows as JSON), and
sessions made up with the same shapes."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from pipeline.settings import Settings
from pipeline.sources import registry
from tests.source_names import SourceName

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "opencode"
SAMPLE_SESSION = "ses_dd020693dffe6EIKlfFJFmz4Cp"
SUBAGENT_PARENT = "ses_dd024ca62ffeYHOIQcx7lqdBTm"
SUBAGENT_CHILD = "ses_dd024c405ffeQHUH060aFI2n3j"
COMPACTED = "ses_dd024668bffelvSY3vOF7tN1XW"
PROJECT_ID = "91cc051c4e213f6cb9dc652810224b0e90288649"
SECRET = "ghp_XGB65dGcQy9eThnpDBZvYxXkNdh62qDRRdNa"


def sample_db(folder: Path) -> Path:
    """The database OpenCode 1.18.33 wrote (one session), copied to ``folder/opencode.db``."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "opencode.db"
    shutil.copyfile(FIXTURES / "opencode.db", db)
    return db


def _encoded(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value


def insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    columns = list(row)
    conn.execute(
        f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
        [_encoded(row[c]) for c in columns],
    )


def bump(conn: sqlite3.Connection, session_id: str) -> None:
    """What every OpenCode write does besides the row itself: the session's event log moves on."""
    conn.execute(
        "INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, 0) "
        "ON CONFLICT(aggregate_id) DO UPDATE SET seq = seq + 1",
        (session_id,),
    )


def load_rows(db: Path, name: str) -> None:
    """Add the sessions of a ``*.rows.json`` fixture (the sub-agent or the compaction run)."""
    data = json.loads((FIXTURES / name).read_text())
    found = data.get("sessions") or data["session"]
    sessions = found if isinstance(found, list) else [found]
    messages = data.get("messages") or data.get("first_8_messages") or []
    parts = data.get("parts") or data.get("their_parts") or []
    with sqlite3.connect(db) as conn:
        for row in sessions:
            insert(conn, "session", row)
        for row in messages:
            insert(conn, "message", row)
        for row in parts:
            insert(conn, "part", row)
        for row in sessions:
            bump(conn, row["id"])
    conn.close()


def user_message(conn: sqlite3.Connection, session_id: str, n: int, text: str, at_ms: int) -> None:
    """A user turn and a finished assistant reply, as OpenCode stores them."""
    user, reply = f"msg_{at_ms:012x}{n:04d}u", f"msg_{at_ms:012x}{n:04d}a"
    insert(
        conn,
        "message",
        {
            "id": user,
            "session_id": session_id,
            "time_created": at_ms,
            "time_updated": at_ms,
            "data": {"role": "user", "time": {"created": at_ms}, "agent": "build"},
        },
    )
    insert(
        conn,
        "part",
        {
            "id": f"prt_{at_ms:012x}{n:04d}u",
            "message_id": user,
            "session_id": session_id,
            "time_created": at_ms,
            "time_updated": at_ms,
            "data": {"type": "text", "text": text},
        },
    )
    insert(
        conn,
        "message",
        {
            "id": reply,
            "session_id": session_id,
            "time_created": at_ms + 1,
            "time_updated": at_ms + 2,
            "data": {
                "role": "assistant",
                "parentID": user,
                "time": {"created": at_ms + 1, "completed": at_ms + 2},
                "finish": "stop",
            },
        },
    )
    insert(
        conn,
        "part",
        {
            "id": f"prt_{at_ms:012x}{n:04d}a",
            "message_id": reply,
            "session_id": session_id,
            "time_created": at_ms + 1,
            "time_updated": at_ms + 2,
            "data": {"type": "text", "text": f"reply {n}", "time": {"start": at_ms + 1, "end": at_ms + 2}},
        },
    )
    bump(conn, session_id)


def new_session(
    conn: sqlite3.Connection,
    session_id: str,
    directory: str,
    at_ms: int,
    *,
    turns: int = 1,
    parent: str | None = None,
) -> None:
    """A session in the sample's project with ``turns`` user turns."""
    insert(
        conn,
        "session",
        {
            "id": session_id,
            "project_id": PROJECT_ID,
            "parent_id": parent,
            "slug": "made-up",
            "directory": directory,
            "title": "made up",
            "version": "1.18.33",
            "time_created": at_ms,
            "time_updated": at_ms + 10 * turns,
        },
    )
    for n in range(turns):
        user_message(conn, session_id, n, f"request {n} in {session_id}", at_ms + 10 * n)


def opencode_settings(base: Path, **sections: Any) -> Settings:
    """Settings that read OpenCode only, at ``base/opencode`` (every other registered source off)."""
    sources = {
        name: {"root": str(base / name), "enabled": name == SourceName.OPENCODE} for name in registry.names()
    }
    paths = {"memory_dir": str(base / "mem"), "state_db": "sqlite:///x", "state_dir": str(base / "st")}
    return Settings.model_validate({"paths": paths, "sources": sources, **sections})
