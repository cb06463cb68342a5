"""The state store's tables, in one place.

Datetimes are stored through ``UTCDateTime``: aware UTC in, aware UTC out, on SQLite (which keeps
no time zone) as on PostgreSQL, so comparisons hold on both.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator

from pipeline.vocabulary import JobState


class UTCDateTime(TypeDecorator[datetime]):
    """Stores aware datetimes as UTC; returns aware UTC datetimes. Naive input is refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the state store; use aware UTC datetimes")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()

# Schema bookkeeping: one row, the version the database was migrated to.
schema_version = Table(
    "memd_schema",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("migrated_at", UTCDateTime, nullable=False),
    Column("memd_version", String(32), nullable=False),
)

# One row per transcript file the scanner has seen.
transcripts = Table(
    "transcripts",
    metadata,
    Column("id", Integer, primary_key=True),
    # The machine whose file it is (``pipeline.machine``): machines sharing a PostgreSQL store each
    # scan and extract their own, and one path on two machines is two rows.
    Column("machine", String(64), nullable=False),
    Column("source", String(32), nullable=False),
    Column("path", Text, nullable=False),
    Column("session_id", String(200)),
    Column("cwd", Text),
    Column("project", Text),
    # What the last scan saw of the file (one stat decides whether it changed).
    Column("dev", BigInteger),
    Column("ino", BigInteger),
    Column("size", BigInteger),
    Column("mtime_ns", BigInteger),
    Column("parsed_offset", BigInteger, nullable=False, default=0),
    Column("parse_state", JSON),
    # What the records say.
    Column("user_messages", Integer, nullable=False, default=0),
    Column("started_at", UTCDateTime),
    Column("last_activity", UTCDateTime),
    Column("flags", JSON),
    Column("external_context", JSON),
    Column("redactions", JSON),
    # Where it stands.
    Column("state", String(32), nullable=False, default="new"),
    Column("reason", Text),
    Column("eligible_at", UTCDateTime),
    Column("extracted_offset", BigInteger, nullable=False, default=0),
    Column("extracted_at", UTCDateTime),
    Column("first_seen_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("changed_in_scan", Integer, nullable=False, default=0),
    UniqueConstraint("machine", "path", name="uq_transcripts_machine_path"),
)
# The state index also serves `memd scan`'s "most recent per state" (pipeline.scan.view); the
# other two keep its counts and the scan index's generation to an index read.
Index("ix_transcripts_machine_state", transcripts.c.machine, transcripts.c.state, transcripts.c.last_activity)
Index("ix_transcripts_machine_source_state", transcripts.c.machine, transcripts.c.source, transcripts.c.state)
Index("ix_transcripts_machine_updated", transcripts.c.machine, transcripts.c.updated_at)
Index("ix_transcripts_session", transcripts.c.source, transcripts.c.session_id)
# The usage section's sessions of a project since a moment, and the projects active since then.
Index("ix_transcripts_project_activity", transcripts.c.project, transcripts.c.last_activity)
# The next active session to become idle (pipeline.store.read.sessions.NEXT_IDLE_SQL): the first of one range.
Index(
    "ix_transcripts_machine_state_eligible",
    transcripts.c.machine,
    transcripts.c.state,
    transcripts.c.eligible_at,
)

# Work items: claimed with one statement, fenced by owner token.
jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("key", Text, nullable=False),
    Column("state", String(16), nullable=False, default=JobState.PENDING.value),
    Column("payload", JSON),
    Column("not_before", UTCDateTime),
    Column("owner", String(64)),
    Column("lease_until", UTCDateTime),
    Column("attempts", Integer, nullable=False, default=0),
    Column("last_error", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # The only machine that may claim it (an extract reads that machine's file); None: any machine.
    Column("machine", String(64)),
    UniqueConstraint("kind", "key", name="uq_jobs_kind_key"),
)
Index("ix_jobs_claim", jobs.c.kind, jobs.c.state, jobs.c.not_before)

# Named leases (a scope's consolidation, the instance): owner token, expiry, who holds it.
leases = Table(
    "leases",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("owner", String(64), nullable=False),
    Column("host", String(200), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("acquired_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    # The holder's machine: its pid means something only there (elsewhere, the expiry decides).
    Column("machine", String(64)),
)

# Phase-1 outputs, with provenance. A newer extract of the same transcript supersedes the older.
stage1_outputs = Table(
    "stage1_outputs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("transcript_id", Integer, ForeignKey("transcripts.id", ondelete="CASCADE"), nullable=False),
    Column("source", String(32), nullable=False),
    Column("session_id", String(200), nullable=False),
    Column("project", Text),
    Column("scope", Text, nullable=False),
    Column("range_start", BigInteger, nullable=False),
    Column("range_end", BigInteger, nullable=False),
    # The conversation items (0-based, end exclusive) this extract read; a grown session's next
    # extract starts at items_end.
    Column("items_start", Integer, nullable=False, default=0),
    Column("items_end", Integer, nullable=False, default=0),
    Column("rollout_slug", String(200), nullable=False),
    Column("rollout_summary", Text, nullable=False),
    Column("raw_memory", Text, nullable=False),
    Column("memories", JSON, nullable=False),
    Column("model", String(100), nullable=False),
    Column("usage", JSON, nullable=False),
    Column("redactions", JSON),
    Column("session_started_at", UTCDateTime),
    Column("session_last_activity", UTCDateTime),
    Column("created_at", UTCDateTime, nullable=False),
    Column("superseded_by", Integer),
    Column("forgotten_at", UTCDateTime),
    Column("use_count", Integer, nullable=False, default=0),
    Column("last_used_at", UTCDateTime),
)
Index("ix_stage1_scope", stage1_outputs.c.scope, stage1_outputs.c.superseded_by)

# One row per model call: what it cost.
llm_calls = Table(
    "llm_calls",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("at", UTCDateTime, nullable=False),
    Column("phase", String(16), nullable=False),
    Column("model", String(100), nullable=False),
    Column("job_key", Text),
    Column("batch", Boolean, nullable=False, default=False),
    Column("input_tokens", Integer, nullable=False, default=0),
    Column("output_tokens", Integer, nullable=False, default=0),
    Column("cache_read_tokens", Integer, nullable=False, default=0),
    Column("cache_write_tokens", Integer, nullable=False, default=0),
    Column("cost_usd", Float, nullable=False, default=0.0),
    Column("outcome", String(32), nullable=False),
    Column("prompt_hash", String(64)),
)
Index("ix_llm_calls_at", llm_calls.c.at)

# Small named facts: the rate-limit gate, the last scan, the daemon's status line.
kv = Table(
    "kv",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("value", JSON, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

# Message Batches submitted and not yet collected.
batches = Table(
    "batches",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("batch_id", String(200), nullable=False, unique=True),
    Column("phase", String(16), nullable=False),
    Column("custom_ids", JSON, nullable=False),
    Column("state", String(32), nullable=False),
    Column("submitted_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    # The machine that submitted it: only it collects it (its entries are its own sessions).
    Column("machine", String(64)),
)

# Consolidation scopes and their runs.
scopes = Table(
    "scopes",
    metadata,
    Column("key", Text, primary_key=True),
    Column("project", Text),
    Column("watermark", JSON),
    Column("last_success_at", UTCDateTime),
    Column("last_commit", String(64)),
    Column("updated_at", UTCDateTime, nullable=False),
    # After a failed run: no new run of the scope before this (a rate limit's reset, or the cooldown).
    Column("retry_at", UTCDateTime),
)

consolidation_runs = Table(
    "consolidation_runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", String(64), nullable=False, unique=True),
    Column("scope", Text, nullable=False),
    Column("mode", String(16), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("outcome", String(32), nullable=False),
    Column("reason", Text),
    Column("commit", String(64)),
    Column("branch", String(200)),
    Column("inputs", JSON),
    Column("usage", JSON),
)
Index("ix_runs_scope", consolidation_runs.c.scope, consolidation_runs.c.started_at)

# Where each scope was last published, and what was written, to notice outside edits.
publications = Table(
    "publications",
    metadata,
    # The machine that published (``pipeline.machine``): each machine publishes into its own homes.
    Column("machine", String(64), primary_key=True),
    Column("target", String(64), primary_key=True),
    Column("scope", Text, primary_key=True),
    Column("path", Text, nullable=False),
    Column("content_sha256", String(64)),
    Column("published_at", UTCDateTime),
    Column("outcome", String(32), nullable=False),
    Column("reason", Text),
    # The last time memd published again because someone else (Codex's own consolidation, a user)
    # changed what memd had published there, and what was noticed; kept across later publishes.
    Column("republished_at", UTCDateTime),
    Column("republish_reason", Text),
)

# When a later session read a published memory.
memory_uses = Table(
    "memory_uses",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("scope", Text, nullable=False),
    Column("file", Text, nullable=False),
    Column("transcript_id", Integer, ForeignKey("transcripts.id", ondelete="CASCADE")),
    Column("used_at", UTCDateTime, nullable=False),
    UniqueConstraint("file", "transcript_id", "used_at", name="uq_memory_uses"),
)
# A scope's uses since a moment, read from the index alone (the usage section's aggregates).
Index(
    "ix_memory_uses_scope_used",
    memory_uses.c.scope,
    memory_uses.c.used_at,
    memory_uses.c.file,
    memory_uses.c.transcript_id,
)

# Which host each machine id is on (``pipeline.store.machines``): the key an installation uses in
# the store is its machine id on the first host that used it, and the id plus the host's on any
# other host found with the same id (a cloned VM, a restored backup, a copied home), so the two are
# two machines. ``person`` is whose ``global/`` its extracts feed (``[team] person``).
machines = Table(
    "machines",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("machine_id", String(64), nullable=False),
    Column("host_id", String(64), nullable=False),
    Column("hostname", String(200), nullable=False),
    Column("person", String(200)),
    Column("first_seen_at", UTCDateTime, nullable=False),
    Column("seen_at", UTCDateTime, nullable=False),
    UniqueConstraint("machine_id", "host_id", name="uq_machines_id_host"),
)

# The running daemon's heartbeat, so `memd status` can tell a live daemon from a dead one.
heartbeats = Table(
    "heartbeats",
    metadata,
    Column("instance", String(64), primary_key=True),
    Column("host", String(200), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("version", String(32), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("beat_at", UTCDateTime, nullable=False),
    Column("status", Text),
    Column("stopped_at", UTCDateTime),
    Column("machine", String(64)),
)

# Notes an agent (or its user) handed memd mid-session (``memd mcp``'s ``memory_remember``): each
# waits as an input of its scope's next consolidation; ``run_id`` is the run that took it (its
# outcome says whether the note landed, waits in the inbox or was rejected).
memory_notes = Table(
    "memory_notes",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("scope", Text, nullable=False),
    Column("project", Text),
    Column("text", Text, nullable=False),
    Column("reason", Text),
    Column("origin", String(64), nullable=False),
    # The MCP server process the note came through (the cap on notes is per scope and machine).
    Column("session", String(64), nullable=False),
    Column("machine", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("run_id", String(64)),
)
Index("ix_memory_notes_scope", memory_notes.c.scope, memory_notes.c.run_id)
Index("ix_memory_notes_session", memory_notes.c.session, memory_notes.c.created_at)

# What an agent said of a memory it read (``memory_feedback``), beside the hit rate: ``wrong`` and
# ``stale`` flag the topic for its scope's next consolidation (``resolved_run``: the run given it).
memory_feedback = Table(
    "memory_feedback",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("scope", Text, nullable=False),
    Column("file", Text, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("note", Text),
    Column("session", String(64), nullable=False),
    Column("machine", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("resolved_run", String(64)),
    Column("resolved_at", UTCDateTime),
)
Index("ix_memory_feedback_scope", memory_feedback.c.scope, memory_feedback.c.resolved_run)
