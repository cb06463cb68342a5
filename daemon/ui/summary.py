"""What the page answers after accept, reject, forget and a change to one memory: a few lines of
counts (the full report, as the command prints it (``daemon.words``), goes behind a ``<details>``)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from daemon.words import forgotten_lines, no_key_warning, steer_first_line, steer_unfinished_lines
from pipeline.vocabulary import PUBLISH_FAILED, PublishOutcome

if TYPE_CHECKING:
    from daemon.usecases.changes import Accepted, Forgotten
    from daemon.usecases.memories import SteerDone
    from pipeline.publish.run import PublishReport

LISTED = 3
"""The most scopes (or failed targets) a summary names one by one; more are counted."""


def publish_summary(report: PublishReport | None) -> list[str]:
    """The published copies counted (written or withdrawn, current, skipped, failed), and each
    failed one named."""
    if report is None:
        return []
    counts: Counter[str] = Counter()
    failed = []
    for r in report.results:
        if r.outcome in PUBLISH_FAILED:
            counts["failed"] += 1
            failed.append(r)
        elif r.written or r.removed:
            counts["written"] += 1
        elif r.outcome == PublishOutcome.SKIPPED:
            counts["skipped"] += 1
        else:
            counts["current"] += 1
    lines = [
        f"published copies: {counts['written']} written, {counts['current']} current, "
        f"{counts['skipped']} skipped, {counts['failed']} failed"
    ]
    lines += [f"failed: {r.scope} to {r.target}: {r.reason or r.outcome}" for r in failed[:LISTED]]
    if len(failed) > LISTED:
        lines.append(f"failed: {len(failed) - LISTED} more")
    return lines


def accepted_summary(done: Accepted) -> list[str]:
    return [
        f"accepted: the memory repository is at {done.head[:12]}",
        *(done.synced.lines()[:1] if done.synced is not None else []),
        *publish_summary(done.published),
    ]


def forgotten_summary(done: Forgotten) -> list[str]:
    report = done.report
    lines = [f"note: {no_key_warning(done.no_key).split(';')[0]}"] if done.no_key is not None else []
    if not report.forgotten and not report.held and not report.runs:
        return lines + forgotten_lines(done)[:2]  # nothing to forget, or nothing forgotten and why
    if len(report.forgotten) <= LISTED:
        lines += [f"{scope}: {n} extract(s) forgotten" for scope, n in sorted(report.forgotten.items())]
    else:
        lines.append(
            f"{sum(report.forgotten.values())} extract(s) forgotten in {len(report.forgotten)} scopes"
        )
    if report.held:
        files = sum(report.held.values())
        lines.append(
            f"another machine's session: {files} input file(s) removed in {len(report.held)} scope(s)"
        )
    if report.dropped_inbox:
        lines.append(f"dropped {len(report.dropped_inbox)} pending review run(s)")
    if len(report.runs) <= LISTED:
        lines += [f"{run.scope}: {run.outcome}" for run in report.runs]
    else:
        outcomes = Counter(str(run.outcome) for run in report.runs)
        lines.append("scopes: " + ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())))
    lines += publish_summary(done.published)
    # Where the forgotten text still is, when a rewrite or a publish did not finish: never folded away.
    return lines + [line for line in forgotten_lines(done) if line.startswith("NOT finished")]


def steered_summary(done: SteerDone) -> list[str]:
    """What a change to one memory did (its commit, or that nothing changed), and the published copies."""
    # Where the memory is still as it was, when a publish failed: never folded away.
    return [steer_first_line(done), *publish_summary(done.published), *steer_unfinished_lines(done)]
