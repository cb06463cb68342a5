"""Whether a session is ready for extraction, and if not, why not: one pure function.

The scanner gathers the facts (from the records, the file and the project) and this module turns
them into a state and a reason a user can read. Time comes in as ``now``.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from datetime import datetime, timedelta

from pipeline import roster
from pipeline.projects import IGNORE_FILE
from pipeline.settings import MemoriesSettings
from pipeline.transcript import SessionFacts, Transcript
from pipeline.vocabulary import TranscriptState

PROJECT_OPTED_OUT = f"opted out: the project has a {IGNORE_FILE} file"
SESSION_OPTED_OUT = "opted out: the session contains memd:ignore"
NO_PROJECT = (
    "its project cannot be told: the session records no working directory memd could map to a project"
    f"{roster.project_hints()}; what it taught is never put in the global scope, which every project reads"
)


def facts_of(
    t: Transcript,
    *,
    project: str | None,
    project_opted_out: bool,
    last_activity: datetime | None,
    parsed_offset: int = 0,
    extracted_offset: int = 0,
) -> SessionFacts:
    """The facts of a parsed session (the scanner's, and phase 1's last look before sending)."""
    return SessionFacts(
        last_activity=last_activity,
        user_messages=t.user_message_count,
        project=project,
        subagent=t.subagent,
        compaction_run=t.compaction_run,
        memd_generated=t.memd_generated,
        non_interactive=t.non_interactive,
        opted_out=t.opted_out,
        project_opted_out=project_opted_out,
        external_context=t.external_context,
        parsed_offset=parsed_offset,
        extracted_offset=extracted_offset,
    )


@dataclass(frozen=True)
class Verdict:
    state: TranscriptState
    reason: str | None
    eligible_at: datetime | None = None
    """For an active session: when it will have been idle long enough."""


def _excluded(project: str | None, globs: tuple[str, ...]) -> str | None:
    if not project:
        return None
    for pattern in globs:
        expanded = os.path.expanduser(pattern)
        if fnmatch.fnmatchcase(project, expanded) or fnmatch.fnmatchcase(project + "/", expanded):
            return pattern
    return None


def evaluate(facts: SessionFacts, settings: MemoriesSettings, now: datetime) -> Verdict:
    """The session's state and reason. Checks run from the most permanent reason to the most passing."""
    if facts.unreadable_reason:
        return Verdict(TranscriptState.UNREADABLE, facts.unreadable_reason)
    if facts.incomplete_reason:
        return Verdict(TranscriptState.INCOMPLETE, facts.incomplete_reason)
    skip = skip_reason(facts, settings)
    if skip is not None:
        return Verdict(TranscriptState.SKIPPED, skip)
    if facts.last_activity is None:
        return Verdict(TranscriptState.SKIPPED, "no activity time in the records or the file")
    if facts.last_activity < now - timedelta(days=settings.max_rollout_age_days):
        return Verdict(
            TranscriptState.SKIPPED, f"too old: last activity over {settings.max_rollout_age_days:g} days ago"
        )
    idle_at = facts.last_activity + timedelta(hours=settings.min_rollout_idle_hours)
    if idle_at > now:
        return Verdict(
            TranscriptState.ACTIVE,
            f"active: idle at {idle_at.strftime('%Y-%m-%d %H:%M UTC')}",
            eligible_at=idle_at,
        )
    if facts.extracted_offset and facts.extracted_offset >= facts.parsed_offset:
        return Verdict(TranscriptState.EXTRACTED, None)
    if facts.failed_reason:
        return Verdict(TranscriptState.FAILED, facts.failed_reason)
    return Verdict(TranscriptState.ELIGIBLE, None)


def skip_reason(facts: SessionFacts, settings: MemoriesSettings) -> str | None:
    """Why the session is never to be extracted, whatever the time, or None. Phase 1 asks again
    just before a queued session is sent, with the session as it is then and the settings in force."""
    if facts.memd_generated:
        return "memd's own consolidation session: never an input"
    if facts.compaction_run:
        return "compaction run: not user work"
    if facts.subagent:
        return "sub-agent session: its work is part of the parent session"
    if not facts.project:
        return NO_PROJECT
    if facts.project_opted_out:
        return PROJECT_OPTED_OUT
    if facts.opted_out:
        return SESSION_OPTED_OUT
    pattern = _excluded(facts.project, settings.exclude_projects)
    if pattern is not None:
        return f"excluded project (matches {pattern!r})"
    if facts.non_interactive and not settings.include_non_interactive:
        return "non-interactive (headless) run; set include_non_interactive to keep these"
    if facts.user_messages < settings.min_user_messages:
        return (
            f"too few user messages ({facts.user_messages} < min_user_messages {settings.min_user_messages})"
        )
    if facts.external_context and settings.disable_on_external_context:
        seen = ", ".join(facts.external_context)
        return f"used external context ({seen}) and disable_on_external_context is on"
    return None
