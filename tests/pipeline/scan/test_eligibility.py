from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from pipeline.scan.eligibility import evaluate
from pipeline.settings import MemoriesSettings
from pipeline.transcript import SessionFacts
from pipeline.vocabulary import TranscriptState

ACTIVE = TranscriptState.ACTIVE
ELIGIBLE = TranscriptState.ELIGIBLE
EXTRACTED = TranscriptState.EXTRACTED
FAILED = TranscriptState.FAILED
SKIPPED = TranscriptState.SKIPPED
UNREADABLE = TranscriptState.UNREADABLE

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
BASE = SessionFacts(
    last_activity=NOW - timedelta(hours=7), user_messages=3, project="/home/u/app", parsed_offset=100
)
SETTINGS = MemoriesSettings()


def test_an_idle_session_with_user_messages_is_eligible() -> None:
    assert evaluate(BASE, SETTINGS, NOW).state == ELIGIBLE


def test_an_active_session_says_when_it_will_be_idle() -> None:
    facts = replace(BASE, last_activity=NOW - timedelta(hours=1))
    verdict = evaluate(facts, SETTINGS, NOW)
    assert verdict.state == ACTIVE
    assert verdict.eligible_at == NOW + timedelta(hours=5)
    assert verdict.reason == "active: idle at 2026-11-01 17:00 UTC"


def test_zero_idle_hours_means_idle_now() -> None:
    facts = replace(BASE, last_activity=NOW)
    assert evaluate(facts, MemoriesSettings(min_rollout_idle_hours=0), NOW).state == ELIGIBLE


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"last_activity": NOW - timedelta(days=31)}, "too old"),
        ({"subagent": True}, "sub-agent"),
        ({"compaction_run": True}, "compaction run"),
        ({"memd_generated": True}, "memd's own"),
        ({"user_messages": 0}, "too few user messages (0 < min_user_messages 1)"),
        ({"non_interactive": True}, "non-interactive"),
        ({"opted_out": True}, "memd:ignore"),
        ({"project_opted_out": True}, ".memd-ignore"),
        ({"project": "/home/u/secret-work"}, "excluded project"),
        ({"last_activity": None}, "no activity time"),
    ],
)
def test_every_skip_carries_its_reason(change: dict[str, object], reason: str) -> None:
    settings = MemoriesSettings(exclude_projects=("~/nothing", "/home/u/secret-*"))
    verdict = evaluate(replace(BASE, **change), settings, NOW)  # type: ignore[arg-type]
    assert verdict.state == SKIPPED
    assert verdict.reason is not None
    assert reason in verdict.reason


def test_external_context_skips_only_when_the_option_is_on() -> None:
    facts = replace(BASE, external_context=("mcp:github/create_issue", "web_search"))
    assert evaluate(facts, SETTINGS, NOW).state == ELIGIBLE
    verdict = evaluate(facts, MemoriesSettings(disable_on_external_context=True), NOW)
    assert verdict.state == SKIPPED
    assert "mcp:github/create_issue, web_search" in (verdict.reason or "")


def test_non_interactive_sessions_can_be_included() -> None:
    facts = replace(BASE, non_interactive=True)
    assert evaluate(facts, MemoriesSettings(include_non_interactive=True), NOW).state == ELIGIBLE


def test_extracted_until_it_grows_then_eligible_again() -> None:
    done = replace(BASE, extracted_offset=100)
    assert evaluate(done, SETTINGS, NOW).state == EXTRACTED
    grown = replace(done, parsed_offset=180)
    assert evaluate(grown, SETTINGS, NOW).state == ELIGIBLE


def test_unreadable_wins_and_failed_stays_failed_until_the_file_changes() -> None:
    assert evaluate(replace(BASE, unreadable_reason="not JSONL"), SETTINGS, NOW).state == UNREADABLE
    failed = evaluate(replace(BASE, failed_reason="400: prompt too long"), SETTINGS, NOW)
    assert (failed.state, failed.reason) == (FAILED, "400: prompt too long")


def test_a_session_whose_project_cannot_be_told_is_skipped_with_the_reason() -> None:
    # Issue 13 (6): such a session used to be extracted into the global scope, shown in every project.
    verdict = evaluate(replace(BASE, project=None), SETTINGS, NOW)
    assert verdict.state == SKIPPED
    assert verdict.reason is not None
    assert verdict.reason.startswith("its project cannot be told:")
