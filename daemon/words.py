"""What the command line and the web page say of a use case's result (``daemon.usecases``), in the
same words: the page shows these lines behind its short summary (``daemon.ui.summary``), the
commands print them. The use cases return data only; every sentence about it lives here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.memory.steer import EDIT, FORGET, PIN, UNPIN, Steered
from pipeline.vocabulary import PUBLISH_FAILED, PublishOutcome

if TYPE_CHECKING:
    from daemon.usecases.changes import Accepted, ConsolidatedNow, Forgotten
    from daemon.usecases.memories import SteerDone, Why
    from daemon.usecases.sync import Synced
    from pipeline.consolidate.forget import ForgetReport
    from pipeline.memory.forget_history import Rewritten
    from pipeline.publish.run import PublishReport
    from pipeline.store.consolidation import RunRow
    from pipeline.sync.run import SyncReport

MORE = "-v lists them"
"""The command line's hint after a count of rows its summary leaves out."""


# Publishing and syncing, after any change ---------------------------------------------------------


def publish_lines(report: PublishReport, *, verbose: bool = False) -> list[str]:
    """What publishing did: each copy it wrote, withdrew or failed on (refused included), then how
    many targets it skipped; ``verbose`` lists the skipped ones too, each with its reason."""
    lines = []
    skipped = 0
    for r in report.results:
        if not (r.written or r.removed or r.outcome in PUBLISH_FAILED or r.outcome == PublishOutcome.SKIPPED):
            continue
        if r.outcome == PublishOutcome.SKIPPED and not (r.written or r.removed):
            skipped += 1
            if not verbose:
                continue
        files = ", ".join(
            part
            for part in (
                f"wrote {len(r.written)} file(s)" if r.written else "",
                f"removed {len(r.removed)} file(s)" if r.removed else "",
            )
            if part
        )
        lines.append(f"published {r.scope} to {r.target}: {r.outcome}" + (f" ({files})" if files else ""))
        lines.append(f"  {r.path}")
        if r.reason:
            lines.append(f"  {r.reason.removeprefix(f'{r.path}: ')}")
    left_out = f"skipped {skipped} target{'s' if skipped != 1 else ''}" + ("" if verbose else f" ({MORE})")
    if not any(line.startswith("published ") for line in lines):
        lines.append("published copies: already current, nothing to write")
    if skipped and not verbose:
        lines.append(f"published copies: {left_out}")
    return lines


def sync_lines(report: SyncReport | None) -> list[str]:
    return [] if report is None else report.lines()


def synced_lines(done: Synced, *, verbose: bool = False) -> list[str]:
    """`memd sync`: the sync's report, then what publishing did when the merge changed the memory."""
    return [
        *done.report.lines(),
        *(publish_lines(done.published, verbose=verbose) if done.published is not None else []),
    ]


# The inbox, `memd consolidate` --------------------------------------------------------------------


def accepted_lines(done: Accepted, *, verbose: bool = False) -> list[str]:
    return [
        f"accepted: the memory repository is at {done.head[:12]}",
        *sync_lines(done.synced),
        *publish_lines(done.published, verbose=verbose),
    ]


def rejected_line(run: RunRow) -> str:
    return (
        f"rejected {run.run_id} ({run.scope}): its branch is deleted; the memory and its published copies "
        "stay as they were"
    )


def consolidated_lines(done: ConsolidatedNow, *, verbose: bool = False) -> list[str]:
    return [
        *done.report.run_lines(),
        *sync_lines(done.synced),
        *(publish_lines(done.published, verbose=verbose) if done.published is not None else []),
    ]


# Forgetting a session or a project ----------------------------------------------------------------


def no_key_warning(reason: str) -> str:
    """Said before a forget without a model (``Forgotten.no_model``): why scopes with other sessions
    could not be rewritten."""
    return (
        f"{reason}; what the forgotten session taught is withdrawn now, and the digest of each scope "
        "that still has other sessions waits as a placeholder until a consolidation with a key "
        "(here, or on another machine that syncs) rebuilds it"
    )


def forgotten_lines(done: Forgotten, *, verbose: bool = False) -> list[str]:
    return [
        *forget_lines(
            done.report, done.what, done.published, done.dialect, verbose=verbose, history=done.history
        ),
        *sync_lines(done.synced),
    ]


def forget_lines(
    report: ForgetReport,
    what: str,
    published: PublishReport | None,
    dialect: str,
    *,
    verbose: bool = False,
    history: Rewritten | None = None,
) -> list[str]:
    """What forgetting did, scope by scope, and where the forgotten text still is."""
    if report.refused is not None:
        return [
            f"nothing forgotten: {report.refused}",
            f"nothing changed: the extracts of {what} are kept and the memory and its published copies "
            "stay as they were",
        ]
    if not report.matched:
        return [
            f"nothing to forget: no extract of {what} is left here, and the memory repository holds "
            "none of its text (unknown, or forgotten already)"
        ]
    lines = [f"{scope}: {count} extract(s) forgotten" for scope, count in sorted(report.forgotten.items())]
    lines += [
        f"{scope}: another machine's session; its {count} input file(s) in the memory repository are "
        "removed and its tombstone travels to the other machines (they forget their extracts of it)"
        for scope, count in sorted(report.held.items())
    ]
    lines += [
        f"{scope}: forgotten earlier, but its memory still held it (that rewrite did not finish): rewritten now"
        for scope in report.unfinished
    ]
    where = (
        "and from the database file"
        if dialect == "sqlite"
        else "(PostgreSQL keeps old row versions until VACUUM FULL, and its WAL and backups keep theirs)"
    )
    lines.append(
        "state store: the forgotten extracts' summaries, notes and memories are removed "
        f"{where}; their ids and the fact of forgetting stay"
    )
    lines += [
        f"dropped pending review {run_id}: its branch is deleted, none of it landed"
        for run_id in report.dropped_inbox
    ]
    for run in report.runs:
        line = f"{run.scope}: {run.outcome}"
        if run.commit:
            line += f" {run.commit[:12]}"
        if run.reason:
            line += f" ({run.reason.splitlines()[0]})"
        lines.append(line)
        lines += [
            f"  {run.scope}/{rel} was pinned: it cited {what}, and a forget outranks a pin, so it is "
            "withdrawn all the same"
            for rel in run.pinned_withdrawn
        ]
        lines += [f"  {change}" for change in run.changes]
        for path in sorted(run.withdrawn):
            how = "rebuilt from the remaining inputs" if path in run.rebuilt else "not rebuilt"
            lines.append(f"  memd withdrew {path} (it cited a forgotten session): {how}")
        for path, why in sorted(run.removed_topics.items()):
            if path not in run.withdrawn:
                lines.append(f"  memd removed {path} ({why})")
    if published is not None:
        lines += publish_lines(published, verbose=verbose)
    lines += unfinished_lines(report, what, published)
    lines.append("git history: " + history_line(history))
    return lines


def unfinished_lines(report: ForgetReport, what: str, published: PublishReport | None) -> list[str]:
    """Where what was forgotten is still, when a rewrite or a publish failed (empty: nowhere)."""
    from daemon.usecases.changes import (
        RUN_NOT_LANDED,  # lazy: the consolidation, the model client, SQLAlchemy
    )

    lines = []
    not_rewritten = [r.scope for r in report.runs if r.outcome in RUN_NOT_LANDED]
    if not_rewritten:
        lines.append(
            f"NOT finished: the memory of {', '.join(not_rewritten)} still holds what {what} taught (its "
            "rewrite failed, above), and so do its published copies; the same memd forget finishes it"
        )
    for r in published.results if published is not None else []:
        if r.outcome in PUBLISH_FAILED:
            lines.append(
                f"NOT finished: the published copy at {r.path} may still hold what {what} taught (its "
                "publish failed, above); `memd publish` writes it again"
            )
    if report.runs and not lines:
        rebuilt_later = [r.scope for r in report.runs if r.mode == "WITHDRAW"]
        if rebuilt_later:
            lines.append(
                f"{', '.join(rebuilt_later)}: what {what} taught is withdrawn; the digest (and the withdrawn "
                "topics the remaining sessions support) will be rebuilt by the next consolidation with a model "
                "(`memd consolidate` runs it now)"
            )
    return lines


# One memory: forget, edit, pin, unpin, why --------------------------------------------------------

_STATE = {PIN: "pinned", UNPIN: "not pinned", EDIT: "this text", FORGET: "forgotten"}
_DONE = {PIN: "pinned", UNPIN: "unpinned", EDIT: "edited", FORGET: "forgotten"}


def steered_line(steered: Steered) -> str:
    """What a change to one memory did: its commit, or that nothing changed."""
    if steered.commit is None:
        return f"{steered.id}: nothing to change (already {_STATE[steered.action]})"
    return f"{steered.id}: {_DONE[steered.action]} ({steered.commit[:12]})"


def steer_lines(done: SteerDone, *, verbose: bool = False) -> list[str]:
    steered = done.steered
    out = [steer_first_line(done)]
    if steered.action == FORGET and steered.commit is not None and not done.holding:
        out.append(
            "it stays forgotten: memd keeps what it was (never its text) and no consolidation, merge or "
            "other machine brings it back; " + history_line(done.history)
        )
    if steered.digest_withdrawn and steered.commit is not None:
        digest_with = "with the person's text" if steered.action == EDIT else "without this memory"
        out.append(
            f"{steered.scope}/memory_summary.md, the digest written from every topic, is a placeholder "
            f"until the next consolidation with a model rebuilds it {digest_with} (at the next "
            f"cycle, or now: memd consolidate {steered.scope})"
        )
    out += sync_lines(done.synced)
    if done.published is not None:
        out += publish_lines(done.published, verbose=verbose)
    return out + steer_unfinished_lines(done)


def history_line(history: Rewritten | None) -> str:
    """Where a forgotten text is in the memory repository's history after the forget's rewrite."""
    if history is not None and history.skipped is None:
        line = (
            f"its text is gone from the memory repository's history too ({history.commits} commit(s) "
            "made again without it, reflogs expired, old objects pruned)"
        )
        if history.synced:
            line += (
                "; the rewritten history, signed by this machine, travels at the next sync: it replaces "
                "the old one on the remote, and your other trusted machines adopt it at their next sync "
                "(clones made by hand and the remote host's own backups keep what they hold)"
            )
        return line
    why = history.skipped if history is not None and history.skipped else "git log -p"
    return f"the old text remains in the memory repository's git history ({why})"


def steer_first_line(done: SteerDone) -> str:
    """What the change did, or, when a published copy still holds the memory as it was, that it is
    NOT finished."""
    steered = done.steered
    if steered.commit is None or not done.holding:
        return steered_line(steered)
    what = "removed from" if steered.action == FORGET else f"{_DONE[steered.action]} in"
    n = len(done.holding)
    return (
        f"{steered.id}: {what} the memory repository ({steered.commit[:12]}), but NOT finished: "
        f"{n} published cop{'y' if n == 1 else 'ies'} still hold{'s' if n == 1 else ''} it{_as_before(steered)} "
        "(below)"
    )


def steer_unfinished_lines(done: SteerDone) -> list[str]:
    """Each published copy that still holds the memory as it was (empty: none)."""
    return [
        f"NOT finished: the published copy at {path} still holds {done.steered.id}{_as_before(done.steered)} "
        "(its publish failed, above); `memd publish` writes it again"
        for path in (done.holding if done.steered.commit is not None else [])
    ]


def _as_before(steered: Steered) -> str:
    return "" if steered.action == FORGET else " as it was before"


def why_lines(why: Why) -> list[str]:
    """The sessions, runs and commits behind one memory, and whether it is edited, pinned or held."""
    meta = why.story.meta
    where = f" ({', '.join(why.folders)})" if why.folders else ""
    out = [f"{why.id}{where}", f"  {meta.name or why.story.file}: {meta.description}".rstrip(": ")]
    state = []
    if meta.edited is not None:
        state.append(f"edited by the person on {meta.edited.isoformat()} (phase 2 never overwrites it)")
    if meta.pinned:
        state.append("pinned (phase 2 never deletes it; published first)")
    state += [
        f"held: the pending inbox run {b.removeprefix('inbox/')} would change it" for b in why.story.held_in
    ]
    out += ["state:", *(f"  {s}" for s in state or ["neither edited, pinned nor held"])]
    out.append(f"sessions ({len(meta.sources)}):")
    for sid in meta.sources:
        row = why.sessions.get(sid)
        if row is None:
            out.append(f"  {sid}: not in this state store (another machine's, or forgotten)")
            continue
        day = row.last_activity or row.started_at
        when = day.date().isoformat() if day is not None else "?"
        out.append(f"  {sid}: {row.source}, {when}, {row.project or '(no project)'}")
    if not meta.sources:
        out.append("  none (written by hand)")
    out.append(f"commits ({len(why.story.commits)}):")
    for c in why.story.commits:
        line = f"  {c.at[:16].replace('T', ' ')}  {c.sha[:10]}  {c.subject} (by {c.author})"
        run = why.runs.get(c.run_id or "")
        if c.run_id:
            line += f"  [run {c.run_id}" + (f", {run.outcome}, {run.mode}]" if run else "]")
        out.append(line)
    return out
