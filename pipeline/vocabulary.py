"""memd's words, each defined once: the states, kinds and outcomes the store records and the CLI shows.

Every module that writes or compares one of these uses the enum, so mypy catches a typo; the values
are the strings stored in the state store and printed by `memd status`, so they never change
without a migration. Standard library only: the fast paths (`memd status`, `memd scan`'s quick
check, `memd recall`) import it too.
"""

from __future__ import annotations

from enum import StrEnum


class TranscriptState(StrEnum):
    """A transcript file's verdict, as the scanner and phase 1 record it."""

    ACTIVE = "active"
    ELIGIBLE = "eligible"
    SKIPPED = "skipped"
    EXTRACTED = "extracted"
    FAILED = "failed"
    UNREADABLE = "unreadable"
    INCOMPLETE = "incomplete"  # caught mid-write; read again at the next scan
    GONE = "gone"  # the file went away after it was recorded


TRANSCRIPT_NOTABLE: tuple[TranscriptState, ...] = (
    TranscriptState.ELIGIBLE,
    TranscriptState.FAILED,
    TranscriptState.UNREADABLE,
)
"""The states `memd scan` tables by default (besides the sessions a scan changed)."""
TRANSCRIPT_FAILED: frozenset[TranscriptState] = frozenset(
    {TranscriptState.FAILED, TranscriptState.UNREADABLE}
)
"""The states `memd status` lists as transcript failures."""


class JobKind(StrEnum):
    """What a row of the ``jobs`` table asks for."""

    EXTRACT = "extract"


class JobState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class BatchState(StrEnum):
    """A Message Batch's life in the store: recorded before the API creates it, then collected."""

    SUBMITTING = "submitting"  # recorded under a placeholder id just before the API is asked to create it
    SUBMITTED = "submitted"
    COLLECTED = "collected"
    ABANDONED = "abandoned"  # never created (the request failed, or memd stopped before sending it)


BATCH_OPEN: frozenset[BatchState] = frozenset({BatchState.SUBMITTING, BatchState.SUBMITTED})
"""A batch whose results are still to be collected (``memd status`` counts these as pending)."""


class RunOutcome(StrEnum):
    """How a consolidation run (phase 2, one scope) ended."""

    RUNNING = "running"
    COMMITTED = "committed"
    CLEARED = "cleared"
    PENDING_REVIEW = "pending_review"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    CRASHED = "crashed"
    WOULD_RUN = "would_run"  # a dry run's answer
    SKIPPED = "skipped"  # nothing to do for the scope (or held back); never recorded as a run


RUN_FAILED: frozenset[RunOutcome] = frozenset({RunOutcome.FAILED, RunOutcome.CRASHED})
"""The consolidation outcomes that are failures of phase 2. Every other one is not: a run accepted
or rejected in the inbox was reviewed, an unchanged one had nothing to write, a cleared one emptied
its scope, a pending or running one has not ended. `memd status` and the store layer
(``pipeline.store.consolidation``) both classify with this."""


def run_failed(outcome: str) -> bool:
    """Whether a recorded consolidation outcome is a failure (``RUN_FAILED``)."""
    return outcome in RUN_FAILED


class PublishOutcome(StrEnum):
    """What one publish target did with one scope."""

    PUBLISHED = "published"
    REPUBLISHED = "republished"
    UNCHANGED = "unchanged"
    WITHDRAWN = "withdrawn"
    SKIPPED = "skipped"
    REFUSED = "refused"
    FAILED = "failed"
    WOULD_PUBLISH = "would_publish"
    WOULD_REPUBLISH = "would_republish"
    WOULD_WITHDRAW = "would_withdraw"


PUBLISH_CURRENT: frozenset[PublishOutcome] = frozenset(
    {PublishOutcome.PUBLISHED, PublishOutcome.REPUBLISHED, PublishOutcome.UNCHANGED, PublishOutcome.WITHDRAWN}
)
"""Publish outcomes after which what is on disk is what memd last wrote (the row keeps its digest)."""
PUBLISH_FAILED: frozenset[PublishOutcome] = frozenset({PublishOutcome.REFUSED, PublishOutcome.FAILED})
"""Publish outcomes after which the agents do not read the memory memd meant them to: a failure."""


class Step(StrEnum):
    """The daemon's steps, in the order a cycle runs them."""

    SCAN = "scan"
    EXTRACT = "extract"
    CONSOLIDATE = "consolidate"
    SYNC = "sync"
    PUBLISH = "publish"


class StepOutcome(StrEnum):
    """How one step of a daemon cycle (a ``Step``) ended."""

    OK = "ok"
    SKIPPED = "skipped"
    DEFERRED = "deferred"
    FAILED = "failed"
    CANCELLED = "cancelled"


class SyncOutcome(StrEnum):
    """How one sync of the memory repository with its git remote (``[sync] remote``) ended."""

    SYNCED = "synced"  # fetched, merged what came in, pushed what was new: both sides agree
    STOPPED = "stopped"  # the remote is refused (history rewritten, an incoming file fails validation)
    FAILED = "failed"  # the remote could not be reached, or git failed: tried again next time
    SKIPPED = "skipped"  # no remote is configured


class DaemonState(StrEnum):
    """Where the daemon is in its life, as it records it in its heartbeat (``status.state``)."""

    CREATED = "created"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    CRASHED = "crashed"


class Health(StrEnum):
    """What `memd status` makes of a daemon from its heartbeat (``pipeline.status.liveness.health``)."""

    RUNNING = "running"
    STUCK = "stuck"  # its process is there, but the heartbeat is stale or a step overran its deadline
    DEAD = "dead"  # it did not stop, and its process is gone
    CRASHED = "crashed"
    STOPPED = "stopped"
    NEVER_STARTED = "never started"
    NO_STORE = "no state store"


class Evidence(StrEnum):
    """What a phase-1 memory rests on: what the user said, what the agent did, or what a tool returned
    (a command's output, a file, a fetched page). The model claims one; memd checks the claim against
    the transcript (``pipeline.extract.evidence``) and stores what held."""

    USER = "user"
    AGENT = "agent"
    TOOL = "tool"


class Verdict(StrEnum):
    """What an agent says of a memory it read (``memd mcp``'s ``memory_feedback``)."""

    HELPED = "helped"
    MISLED = "misled"
    STALE = "stale"
    WRONG = "wrong"


FLAG_VERDICTS: frozenset[Verdict] = frozenset({Verdict.WRONG, Verdict.STALE})
"""The verdicts that flag a topic: `memd status` and its page show it, and its scope's next
consolidation is asked to fix or drop it (``pipeline.store.notes``)."""
