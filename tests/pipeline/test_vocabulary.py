"""The vocabulary's classifications: each state and outcome is in or out, on purpose."""

from __future__ import annotations

import pytest

from pipeline.vocabulary import (
    RUN_FAILED,
    TRANSCRIPT_FAILED,
    TRANSCRIPT_NOTABLE,
    RunOutcome,
    TranscriptState,
    run_failed,
)


@pytest.mark.parametrize(
    "outcome",
    [
        RunOutcome.ACCEPTED,
        RunOutcome.REJECTED,
        RunOutcome.UNCHANGED,
        RunOutcome.CLEARED,
        RunOutcome.COMMITTED,
    ],
)
def test_a_run_that_ended_without_failing_is_not_a_failure(outcome: RunOutcome) -> None:
    assert not run_failed(outcome)
    assert not run_failed(outcome.value)  # as read back from the store


def test_every_run_outcome_is_classified() -> None:
    assert {o for o in RunOutcome if run_failed(o)} == {RunOutcome.FAILED, RunOutcome.CRASHED} == RUN_FAILED
    assert not run_failed("succeeded")  # a word nothing writes is not an outcome


def test_transcript_classifications() -> None:
    assert set(TRANSCRIPT_NOTABLE) == {
        TranscriptState.ELIGIBLE,
        TranscriptState.FAILED,
        TranscriptState.UNREADABLE,
    }
    assert {TranscriptState.FAILED, TranscriptState.UNREADABLE} == TRANSCRIPT_FAILED
    assert set(TRANSCRIPT_NOTABLE) >= TRANSCRIPT_FAILED


def test_the_stored_strings_do_not_change() -> None:
    # They are in every state store: changing one needs a migration.
    assert [s.value for s in TranscriptState] == [
        "active",
        "eligible",
        "skipped",
        "extracted",
        "failed",
        "unreadable",
        "incomplete",
        "gone",
    ]
    assert str(RunOutcome.PENDING_REVIEW) == "pending_review"
    assert f"{TranscriptState.ACTIVE}" == "active"
