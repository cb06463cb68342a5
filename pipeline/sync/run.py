"""One sync of the memory repository with ``[sync] remote``: fetch, check, merge, land, push.

0. Check the memory repository can be written (``MemoryRepo.check_writable``): when it cannot, the
   sync ends ``failed`` naming the path and the reason, before anything is fetched.
1. Fetch the remote's branch through a quarantine, where every incoming object is sized before it
   is read or lands (``incoming.object_findings``): over the caps, refused (``refs/memd/remote/<branch>``;
   the local branch does not move).
2. Refuse a rewritten history: the last remote commit memd synced with (``refs/memd/synced/<branch>``)
   must be an ancestor of what was fetched, unless the remote's history is a forget's rewrite of
   this machine's that passes every check (``rewrites.adopt``): then this machine's refs are rewritten
   onto it first, its unsynced work on top.
3. Nothing new there: go to 6. Otherwise check who signed every incoming commit (``trust``: each
   must be signed by a machine the allowed signers of its parents name, and this machine must be
   among the remote's; else ``NotTrusted``, its work staying local), then the cap on new tombstones,
   then what comes in (``incoming``), and refuse it with the reason when one fails; nothing is
   merged then.
4. Merge as data (``merge``): no file is ever merged by git, so no conflict marker lands anywhere;
   land it (a fast-forward, a commit on the remote's, or a merge commit) on the local branch; mark
   the scopes both sides changed for a new consolidation on top of the remote's topics; forget, in
   this machine's store, the extracts of sessions the remote tombstoned.
5. Consolidate those scopes again (``reconsolidate``, given by the caller: it needs the model).
6. Push the branch, as a fast-forward only, once this machine is among its allowed signers (the
   first machine of an empty remote adds itself first, in a signed commit; in team mode, the
   branch without ``global/``: ``pipeline.team.outgoing``). A push the remote rejects (another machine pushed
   first) goes back to 1, up to ``MAX_ATTEMPTS`` times. memd never pushes by blind force: the one push
   that is not a fast-forward is this machine's signed rewrite of a forget, leased on the remote
   commit it replaces (``rewrites.pending``; a remote that moved on is fetched, checked and rewritten
   too: ``rewrites.catch_up``).

A refusal ends ``stopped``; a remote that cannot be reached or a git failure ``failed``; either way
the reason is recorded for `memd status` and local work goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from pipeline.clock import Clock
from pipeline.errors import MemdError, MemoryRepoError, NotTrusted, SyncRefused
from pipeline.gitrepo import remote
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.gitrepo.repository import MemoryRepo, scratch_parent
from pipeline.layout import GLOBAL_SCOPE, ROLLOUT_DIR, Caps
from pipeline.memory import tombstones
from pipeline.memory.inputs import feeds_global
from pipeline.settings import Settings
from pipeline.store import Store, syncstate
from pipeline.store import consolidation as db
from pipeline.sync import incoming, rewrites, trust
from pipeline.sync.merge import MergeResult, merge_trees
from pipeline.sync.state import SyncState, load, save, scrub, shown_url
from pipeline.sync.urls import scrubbed
from pipeline.team import outgoing
from pipeline.team.personal import keep_own_global, personal_only
from pipeline.vocabulary import SyncOutcome

log = structlog.get_logger(__name__)

MAX_ATTEMPTS = 4
BEFORE_PAIRING_REF = "refs/memd/before-pairing"
"""Where a machine's history from before its first merge with the remote stays (local only)."""
SYNC_TRAILER = "Memd-Sync"

Reconsolidate = Callable[[list[str]], Awaitable[list[str]]]
"""Consolidates the given scopes again; returns one line per scope saying how it went."""
Prepare = Callable[[], Awaitable[object]]
"""Work on the memory repository a sync does first (the scope keys brought up to date)."""


@dataclass
class SyncReport:
    outcome: SyncOutcome
    remote: str = ""
    reason: str | None = None
    fetched: str | None = None
    landed: str | None = None
    """The commit a merge (or a fast-forward) put on the local branch."""
    pushed: str | None = None
    reconsolidate: list[str] = field(default_factory=list)
    reconsolidated: list[str] = field(default_factory=list)
    withdrawn: dict[str, list[str]] = field(default_factory=dict)
    kept_forgotten: dict[str, list[str]] = field(default_factory=dict)
    """Topics the merge kept out because a person forgot them (a forget record, either machine's)."""
    forgotten_here: int = 0
    attempts: int = 0
    ahead: int | None = None
    behind: int | None = None
    untrusted: bool = False
    """This machine is not among the remote's allowed signers: its work stays local (``reason`` says
    which command to run where)."""
    signed_by: dict[str, int] = field(default_factory=dict)
    """The remote's new commits this sync accepted, per machine that signed them."""
    tombstones_from: dict[str, int] = field(default_factory=dict)
    """The new tombstones this sync accepted, per machine that wrote them."""
    signers: list[str] = field(default_factory=list)
    """The machines the memory's allowed signers name, after this sync."""
    revoked: list[str] = field(default_factory=list)
    """The keys the memory's trust log revokes (``<principal> (<fingerprint>)``), after this sync."""
    adopted: int = 0
    """Commits of the remote's rewritten history (a forget on another machine) this sync adopted."""
    adopted_from: list[str] = field(default_factory=list)
    """The machines that signed the records of that rewrite."""
    replaced: str | None = None
    """The remote's commit this sync's push replaced (this machine's rewrite of a forget, leased)."""

    @property
    def changed(self) -> bool:
        """The local branch moved: what is published must follow."""
        return (
            self.landed is not None
            or bool(self.reconsolidated)
            or self.forgotten_here > 0
            or self.adopted > 0
        )

    @property
    def failure(self) -> str | None:
        """Why the sync could not do its work (the cycle marks the step ``failed``), or None."""
        if self.outcome in (SyncOutcome.STOPPED, SyncOutcome.FAILED):
            return f"sync {self.outcome}: {self.reason}"
        return None

    @property
    def spend(self) -> tuple[int, float] | None:
        """A step's model tokens and dollars (``daemon.service.cycle.StepReport``): none spent here."""
        return None

    def summary(self) -> dict[str, Any]:
        """As the step's outcome is recorded (``daemon.service.cycle.StepReport``): its fields."""
        return dict(vars(self))

    def lines(self) -> list[str]:
        if self.outcome == SyncOutcome.SKIPPED:
            return [f"sync skipped: {self.reason}"]
        lines = [f"sync with {self.remote}: {self.outcome}" + (f" ({self.reason})" if self.reason else "")]
        for who, n in sorted(self.signed_by.items()):
            lines.append(f"accepted {n} commit(s) signed by {who}")
        for who, n in sorted(self.tombstones_from.items()):
            lines.append(f"accepted {n} tombstone(s) written by {who}")
        if self.adopted:
            who = f" (a forget on {', '.join(self.adopted_from)})" if self.adopted_from else ""
            lines.append(
                f"adopted the remote's history, rewritten without forgotten text{who}: this machine's "
                "history follows it, its own work on top, and the old text is pruned here"
            )
        if self.landed:
            lines.append(f"merged the remote's commits: the memory repository is at {self.landed[:12]}")
        for scope, files in sorted(self.withdrawn.items()):
            lines.append(
                f"{scope}: withdrew {', '.join(files)} (they cite a session forgotten on another machine)"
            )
        for scope, files in sorted(self.kept_forgotten.items()):
            lines.append(
                f"{scope}: kept out {', '.join(files)} (a person forgot it; the other side still had it)"
            )
        if self.forgotten_here:
            lines.append(f"forgot {self.forgotten_here} extract(s) here that another machine forgot")
        if self.reconsolidate and not self.reconsolidated:
            lines.append(
                "consolidated again at the next consolidation, on top of the remote's topics: "
                + ", ".join(self.reconsolidate)
            )
        lines += self.reconsolidated
        if self.pushed and self.replaced:
            lines.append(
                f"pushed {self.pushed[:12]} over the remote's {self.replaced[:12]}: the history rewritten "
                "without forgotten text, signed by this machine (leased on that commit)"
            )
        elif self.pushed:
            lines.append(f"pushed {self.pushed[:12]}")
        if self.ahead is not None and self.behind is not None:
            lines.append(f"ahead {self.ahead}, behind {self.behind}")
        return lines


@dataclass
class Syncer:
    store: Store
    settings: Settings
    repo: MemoryRepo
    clock: Clock
    finder: SecretFinder | None
    reconsolidate: Reconsolidate | None = None
    held_before: set[str] = field(default_factory=set)
    """The sessions (hashes) this machine's branch held before it adopted a rewrite that took some
    out: a tombstone the merge brings may make it forget them (``trust.forgettable``)."""

    @property
    def caps(self) -> Caps:
        return Caps.of(self.settings.memories)

    @property
    def _screen(self) -> incoming.SizeScreen:
        return incoming.SizeScreen(lambda found: SyncRefused(_refusal(found)))

    @property
    def _scratch(self) -> Path:
        return scratch_parent(self.settings.paths.state_dir, "sync")

    async def run(self, *, push: bool = True, prepare: Prepare | None = None) -> SyncReport:
        """Sync; ``prepare`` runs first, once the memory repository is known to be writable."""
        cfg = self.settings.sync
        if not cfg.enabled:
            return SyncReport(SyncOutcome.SKIPPED, reason="no [sync] remote is configured")
        report = SyncReport(SyncOutcome.SYNCED, remote=shown_url(cfg.remote))
        state = scrub(await load(self.store), cfg.remote)
        state.remote, state.branch = report.remote, cfg.branch
        try:
            self.repo.check_writable()  # before anything is fetched, merged or paid for
            if prepare is not None:
                await prepare()
            await self.repo.ensure()
            await self._no_forgotten_history()
            await self._attempts(report, state, push=push)
        except NotTrusted as exc:
            report.outcome, report.reason, report.untrusted = SyncOutcome.STOPPED, str(exc), True
        except SyncRefused as exc:
            report.outcome, report.reason = SyncOutcome.STOPPED, str(exc)
        except (MemoryRepoError, OSError) as exc:
            report.outcome, report.reason = SyncOutcome.FAILED, _short(exc)
        except MemdError as exc:
            report.outcome, report.reason = SyncOutcome.FAILED, _short(exc)
        if report.reason:
            report.reason = scrubbed(report.reason, cfg.remote)  # never a credential
        await self._record(report, state)
        log.info("sync_finished", outcome=report.outcome, reason=report.reason, attempts=report.attempts)
        return report

    async def _attempts(self, report: SyncReport, state: SyncState, *, push: bool) -> None:
        cfg, repo = self.settings.sync, self.repo
        for attempt in range(1, MAX_ATTEMPTS + 1):
            report.attempts = attempt
            tip, lease = await self._fetch(report)
            state.last_fetch_at = self.clock.now().isoformat()
            report.fetched = tip
            try:
                merged = await self._pull(report, tip)
            except remote.RepoMoved:
                log.info("sync_repo_moved", attempt=attempt)
                continue
            if merged is not None and merged.reconsolidate and self.reconsolidate is not None:
                report.reconsolidated += await self.reconsolidate(sorted(merged.reconsolidate))
            head = await self._trusted_head(report, tip)
            personal = self.store.shared and lease is None and await personal_only(repo, head, tip)
            if push and head != tip and not personal:
                # team mode: the remote gets this branch without global/ (pipeline.team.outgoing), a
                # rewrite's record carried in the commit made for it
                sent = await self._outgoing(head, tip, lease) if self.store.shared else head
                try:
                    await remote.push(
                        repo, cfg.remote, cfg.branch, sent, timeout_s=cfg.timeout_s, lease=lease
                    )
                except remote.PushRejected:
                    log.info("sync_push_rejected", attempt=attempt)
                    continue
                report.replaced = lease
                await remote.set_ref(repo, remote.synced_ref(cfg.branch), sent)
                await remote.set_ref(repo, remote.remote_ref(cfg.branch), sent)
                if self.store.shared:
                    await outgoing.pushed(
                        self.store, repo, cfg.branch, head=head, sent=sent, tip=tip, clock=self.clock
                    )
                report.pushed = sent
                state.last_push_at = self.clock.now().isoformat()
            return
        raise MemoryRepoError(
            f"the remote kept moving: {MAX_ATTEMPTS} attempts, each overtaken by another machine's push "
            "(or a run landing here); tried again at the next sync"
        )

    async def _outgoing(self, head: str, tip: str | None, lease: str | None) -> str:
        """Team mode: the commit pushed for ``head`` (``outgoing``); while this machine's rewrite of
        a forget waits (``lease``), its message carries the record of the rewrite, so the team's other
        machines find and check it (``rewrites.offered``)."""
        branch = self.settings.sync.branch
        carried = await rewrites.marks(self.repo, head, [tip] if tip else []) if lease else []
        return await outgoing.outgoing(self.repo, branch, head, tip, trailers=rewrites.trailers(carried))

    async def _fetch(self, report: SyncReport) -> tuple[str | None, str | None]:
        """The remote's tip to merge, and the lease to push with (None: a fast-forward). While this
        machine's rewrite of a forget waits (``rewrites.pending``), the push leases the commit it
        replaces: when the remote is still there, nothing is fetched (the old objects stay away);
        when it moved on, what it brings is checked and rewritten too (``rewrites.catch_up``); when
        another machine's rewrite of the same history got there first, that is checked and adopted,
        this machine's forgets applied on top (``rewrites.overtaken``, ``rewrites.reapply``)."""
        cfg, repo = self.settings.sync, self.repo
        waiting = await rewrites.pending(repo, cfg.branch)
        if waiting is not None:
            listed = await remote.listed_tip(repo, cfg.remote, cfg.branch, timeout_s=cfg.timeout_s)
            if listed == waiting.lease:
                return await remote.ref_commit(repo, remote.synced_ref(cfg.branch)), waiting.lease
        tip = await remote.fetch(
            repo, cfg.remote, cfg.branch, scratch=self._scratch, timeout_s=cfg.timeout_s, screen=self._screen
        )
        if waiting is None or tip is None:
            return tip, None
        state_dir = Path(self.settings.paths.state_dir)
        over = await rewrites.overtaken(
            repo,
            tip=tip,
            waiting=waiting,
            branch=cfg.branch,
            me=self._me(),
            remote_name=shown_url(cfg.remote),
        )
        if over is not None:  # another machine's forget reached the remote first: adopted, then ours
            await self._keep_forgotten_of(over.offer)  # from the versions this machine held, before they go
            self.held_before |= await self._sessions_held(over.offer.local)
            adopted = await rewrites.reapply(
                repo, over, waiting=waiting, branch=cfg.branch, state_dir=state_dir
            )
            report.adopted, report.adopted_from = adopted.made + adopted.reused, adopted.by
            return over.image, (tip if over.image != tip else None)
        mine = await rewrites.catch_up(
            repo,
            tip=tip,
            waiting=waiting,
            me=self._me(),
            remote_name=shown_url(cfg.remote),
            state_dir=state_dir,
        )
        return mine, tip

    async def _no_forgotten_history(self) -> None:
        """A first sync never pushes a forgotten text: until this machine has synced, its history is
        rewritten without what its forget records and tombstones name (``pipeline.memory.forget_history``; a no-op
        once it has synced, or when nothing was forgotten)."""
        from pipeline.memory import forget_records
        from pipeline.memory.forget_history import rewrite

        records = await asyncio.to_thread(forget_records.read, self.repo.path)
        graves = await asyncio.to_thread(tombstones.read, self.repo.path)
        state_dir = Path(self.settings.paths.state_dir)
        done = await rewrite(self.repo, records, state_dir=state_dir, graves=graves)
        if done.commits:
            log.info("sync_history_rewritten", commits=done.commits, refs=len(done.refs))

    def _me(self) -> trust.AllowedSigner:
        if self.repo.signer is None:
            raise MemoryRepoError("the memory repository has no signing key: memd syncs only signed commits")
        return trust.own_signer(self.repo.signer)

    async def _trusted_head(self, report: SyncReport, tip: str | None) -> str:
        """The head to push, once this machine is among its allowed signers: the first machine of an
        empty remote adds itself (a signed commit); any other not named there is ``NotTrusted``."""
        me, head = self._me(), await self.repo.head()
        signers = await trust.signers_at(self.repo, head)
        if me.key not in {s.key for s in signers}:
            if tip is not None:
                raise trust.not_trusted(me.line(), report.remote)
            message = f"memd: trust {me.principal}, the first machine of {report.remote}\n"
            at = self.clock.now().isoformat()
            await trust.add_signers(self.repo, self.settings.paths.state_dir, [me], message, at=at)
            head = await self.repo.head()
            signers = await trust.signers_at(self.repo, head)
        report.signers = sorted({s.principal for s in signers})
        report.revoked = trust.revoked_lines(await trust.log_of(self.repo, head))
        assert head is not None
        return head

    async def _pull(self, report: SyncReport, tip: str | None) -> MergeResult | None:
        """Check and merge what ``tip`` brings; the merge's result, or None when nothing came in."""
        repo, branch = self.repo, self.settings.sync.branch
        if tip is None:
            return None
        local = await repo.head()
        assert local is not None
        synced = await remote.ref_commit(repo, remote.synced_ref(branch))
        if synced is not None and not await remote.is_ancestor(repo, synced, tip):
            offer = await rewrites.offered(
                repo, tip=tip, synced=synced, me=self._me(), remote_name=report.remote
            )
            if offer is not None:
                await self._keep_forgotten_of(offer)  # from the versions this machine held, before they go
                self.held_before |= await self._sessions_held(offer.local)
                state_dir = Path(self.settings.paths.state_dir)
                adopted = await rewrites.adopt(repo, offer, branch=branch, state_dir=state_dir)
                report.adopted, report.adopted_from = adopted.made + adopted.reused, adopted.by
                local, synced = await repo.head(), adopted.synced
                assert local is not None
        if synced is not None and not await remote.is_ancestor(repo, synced, tip):
            raise SyncRefused(
                f"the remote's history was rewritten: its branch {branch} no longer holds {synced[:12]}, "
                f"the last commit memd synced with it; nothing is fetched into memory until that is "
                f"resolved ({_rewritten_advice(repo.path, remote.synced_ref(branch))})"
            )
        if await remote.is_ancestor(repo, tip, local):
            await remote.set_ref(repo, remote.synced_ref(branch), tip)
            return None
        if self.store.shared and await outgoing.is_ours(repo, branch, tip, local):
            await outgoing.adopt(repo, local, tip)  # what this machine pushed: nothing new in it
            await remote.set_ref(repo, remote.synced_ref(branch), tip)
            return None
        base = await remote.merge_base(repo, local, tip)
        known = [local, *([synced] if synced else [])]
        joining = base is None  # a rewritten history was refused above: this is the first merge
        checked = await trust.check_incoming(repo, tip, known, self._me(), report.remote, joining=joining)
        trees = {name: await remote.tree(repo, sha) for name, sha in (("b", base), ("o", local), ("t", tip))}
        refused = incoming.path_findings(trees["t"])
        if refused:
            raise SyncRefused(_refusal(refused))
        graves = await trust.check_tombstones(repo, tip, known, checked, trees["o"], trees["t"])
        if graves.findings:
            raise SyncRefused(_refusal(graves.findings))
        contents = await remote.blobs(repo, [e.sha for t in trees.values() for e in t.values()])
        files = {name: {p: contents[e.sha] for p, e in t.items()} for name, t in trees.items()}
        new = await remote.new_blobs(repo, tip, [local])
        new_data = await remote.blobs(repo, [sha for sha, _ in new])
        versions = [(path, new_data[sha]) for sha, path in new]
        problems = incoming.findings(
            trees["t"], files["t"], files["o"], versions, caps=self.caps, finder=self.finder
        )
        if problems:
            raise SyncRefused(_refusal(problems))
        arrived = files["t"]
        if self.store.shared:  # team mode: global/ is a person's and never travels (pipeline.team.personal)
            files = keep_own_global(files)
        merged = merge_trees(files["b"], files["o"], files["t"])
        _keep_signers(merged, files["o"], files["t"])
        for who in checked.signers.values():
            report.signed_by[who] = report.signed_by.get(who, 0) + 1
        report.tombstones_from = graves.writers
        report.landed = await self._land(merged, local=local, tip=tip, theirs=arrived, joining=joining)
        await remote.set_ref(repo, remote.synced_ref(branch), tip)
        now = self.clock.now()
        for scope in sorted(merged.reconsolidate):
            await syncstate.mark_merged(self.store, scope, commit=tip, now=now)
        report.reconsolidate = sorted(set(report.reconsolidate) | merged.reconsolidate)
        for scope, gone in merged.withdrawn.items():
            report.withdrawn.setdefault(scope, []).extend(gone)
        for scope, gone in merged.forgotten.items():
            report.kept_forgotten.setdefault(scope, []).extend(gone)
        held = trust.forgettable(files["b"], files["t"]) | self.held_before
        buried = tombstones.hashes_in(merged.files) & held
        report.forgotten_here += await self._forget_buried(buried)
        await self._keep_forgotten(list(checked.signers))
        return merged

    async def _land(
        self, merged: MergeResult, *, local: str, tip: str, theirs: dict[str, bytes], joining: bool = False
    ) -> str:
        """Put the merge on the local branch. ``joining`` (this machine's first merge with the remote,
        no commit in common): the merged memory becomes one signed commit on top of the remote's, and
        the branch moves there; this machine's history from before it was paired stays local
        (``refs/memd/before-pairing``), so no commit the remote's machines cannot check reaches them."""
        repo = self.repo
        on_top = joining or await remote.is_ancestor(repo, local, tip)
        if on_top and merged.files == theirs:
            if joining:
                return await remote.replace_branch(repo, base=local, target=tip, keep=BEFORE_PAIRING_REF)
            return await remote.fast_forward(repo, base=local, target=tip)
        async with repo.scratch(self._scratch, owner="sync") as clone:
            ref = remote.remote_ref(self.settings.sync.branch)
            theirs_sha = await remote.fetch_into(clone, repo.path, ref)
            if on_top:
                await remote.checkout(clone, theirs_sha)
            else:
                await remote.start_merge(clone, theirs_sha)
            await remote.replace_tree(clone, merged.files)
            await clone.commit_staged(_message(self.settings, merged, tip))
            if joining:
                return await remote.replace_branch(repo, base=local, source=clone, keep=BEFORE_PAIRING_REF)
            return await remote.land_exact(repo, clone, base=local)

    async def _forget_buried(self, graves: set[str]) -> int:
        """Forget here the extracts of sessions another machine forgot (its tombstones). The merged
        tree is already without them (``merge``), so they also leave the scopes' watermarks: phase 2
        sees no change to consolidate for their going (a scope that needs rebuilding was marked)."""
        count = 0
        for session in sorted(await syncstate.live_sessions(self.store)):
            if tombstones.is_tombstoned(session, graves):
                counts = await db.forget(
                    self.store, now=self.clock.now(), feeds_global=feeds_global, session_id=session
                )
                await syncstate.drop_from_watermarks(self.store, session, now=self.clock.now())
                count += sum(n for scope, n in counts.items() if scope != GLOBAL_SCOPE)
        return count

    async def _keep_forgotten(self, commits: list[str]) -> None:
        """The memories a person forgot one by one on another machine (``memd memories forget``: the
        commit's ``Memd-Action`` trailer), recorded here too from the version the commit removed, so
        this machine's phase 2 keeps them forgotten as that machine's does (``pipeline.checks.guard``).
        The commits were checked (signed by a trusted machine) and their sizes capped before."""
        from pipeline.memory.likeness import ForgottenTopic
        from pipeline.memory.steer import forgotten_in
        from pipeline.store import forgotten_topics

        for sha in commits:
            now = self.clock.now()
            for record in await forgotten_in(self.repo, sha, at=now.isoformat()):
                await forgotten_topics.record(self.store, record, ForgottenTopic.from_json, now=now)

    async def _sessions_held(self, commit: str) -> set[str]:
        """The hashes of the sessions whose summary the tree of ``commit`` holds."""
        entries = await remote.tree(self.repo, commit)
        summaries = {p: e.sha for p, e in entries.items() if f"/{ROLLOUT_DIR}/" in p}
        data = await remote.blobs(self.repo, list(summaries.values()))
        return trust.forgettable({p: data[sha] for p, sha in summaries.items()})

    async def _keep_forgotten_of(self, offer: rewrites.Offer) -> None:
        """The memories the remote's rewrite took out of the history, recorded here from the versions
        this machine held (their name and description, as ``_keep_forgotten`` records a forget it
        merges: the rewritten history no longer holds the version the forget removed)."""
        from pipeline.memory.likeness import ForgottenTopic
        from pipeline.memory.steer import FORGET, Steered
        from pipeline.store import forgotten_topics

        now = self.clock.now()
        for record in offer.records:
            held = await self.repo.run("show", f"{offer.local}:{record.scope}/{record.file}", check=False)
            if held.returncode == 0:
                steered = Steered(record.scope, record.file, FORGET, None, held.stdout, None)
                await forgotten_topics.record(
                    self.store, steered.forgotten(now.isoformat()), ForgottenTopic.from_json, now=now
                )

    async def _record(self, report: SyncReport, state: SyncState) -> None:
        repo, now = self.repo, self.clock.now()
        state.outcome, state.reason, state.at = report.outcome, report.reason, now.isoformat()
        if report.landed:
            state.last_merge_at = now.isoformat()
        if report.outcome in (SyncOutcome.STOPPED, SyncOutcome.FAILED):
            state.last_error, state.last_error_at = report.reason, now.isoformat()
        if report.untrusted:
            state.trust = f"not trusted: {report.reason}"
        elif report.signers:
            state.trust = f"trusted; {len(report.signers)} machine(s) may sign: {', '.join(report.signers)}"
            if report.revoked:
                state.trust += f"; revoked: {', '.join(report.revoked)}"
        if report.outcome == SyncOutcome.STOPPED and not report.untrusted:
            state.refused, state.refused_at = report.reason, now.isoformat()
        try:
            head = await repo.head()
            tip = await remote.ref_commit(repo, remote.remote_ref(self.settings.sync.branch))
            state.local_head, state.remote_head = head, tip
            if head is not None and tip is not None:
                report.ahead, report.behind = await remote.ahead_behind(repo, head, tip)
                if report.ahead and self.store.shared and await personal_only(repo, head, tip):
                    report.ahead = 0  # team mode: commits of global/ alone are never pushed
            elif head is not None:
                report.ahead, report.behind = None, None
            state.ahead, state.behind = report.ahead, report.behind
        except MemdError as exc:
            log.warning("sync_state_unreadable", error=_short(exc))
        await save(self.store, state, now=now)


def _keep_signers(merged: MergeResult, ours: dict[str, bytes], theirs: dict[str, bytes]) -> None:
    """Who may sign travels with the merge: every entry of both sides' trust logs (each accepted by
    now), and the allowed signers derived from them (``pipeline.sync.trustlog``)."""
    merged.files.update(trust.merged_files(trust.tree_log(ours), trust.tree_log(theirs)))


def _rewritten_advice(path: Path, ref: str) -> str:
    """What to do when the remote's history was rewritten and the rewrite was meant. Following it
    never brings back a memory a person forgot: this machine's branch keeps its forget records
    (``forgotten/``) and the merge keeps every topic they name out (``merge``)."""
    return (
        f"if the rewrite was meant: git -C {path} update-ref -d {ref}, then memd sync; what was "
        "forgotten on this machine stays forgotten, and this machine pushes its forgets back to the remote"
    )


def _refusal(findings: list[str]) -> str:
    shown = "; ".join(findings[:5]) + (f" and {len(findings) - 5} more" if len(findings) > 5 else "")
    return f"the remote's commits fail memd's checks, nothing of them is merged or published: {shown}"


def _message(settings: Settings, merged: MergeResult, tip: str) -> str:
    subject = f"memd: merge {settings.sync.branch} of {shown_url(settings.sync.remote)}"
    body = []
    if merged.combined:
        body.append(
            "Both machines changed "
            + ", ".join(sorted(merged.combined))
            + ": the inputs of both are kept and the remote's topic files taken, to be consolidated again."
        )
    for scope, files in sorted(merged.withdrawn.items()):
        body.append(f"{scope}: withdrew {', '.join(files)} (a tombstoned session)")
    for scope, files in sorted(merged.forgotten.items()):
        body.append(f"{scope}: kept out {', '.join(files)} (forgotten by a person)")
    if merged.cleared:
        body.append("Emptied (every input tombstoned): " + ", ".join(sorted(merged.cleared)))
    return subject + "\n\n" + ("\n".join(body) + "\n\n" if body else "") + f"{SYNC_TRAILER}: {tip}\n"


def _short(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__).splitlines()[0][:500]


async def sync(
    store: Store,
    settings: Settings,
    repo: MemoryRepo,
    clock: Clock,
    finder: SecretFinder | None,
    *,
    reconsolidate: Reconsolidate | None = None,
    prepare: Prepare | None = None,
    push: bool = True,
) -> SyncReport:
    return await Syncer(store, settings, repo, clock, finder, reconsolidate).run(push=push, prepare=prepare)


async def due(store: Store, settings: Settings, repo: MemoryRepo, clock: Clock) -> str | None:
    """Why the daemon should sync now (None: nothing to push, and the last fetch is recent)."""
    if not settings.sync.enabled:
        return None
    head = await repo.head() if (repo.path / ".git").is_dir() else None
    tip = await remote.ref_commit(repo, remote.remote_ref(settings.sync.branch)) if head else None
    state = await load(store)
    if head is not None and head != tip and not (store.shared and await personal_only(repo, head, tip)):
        return "the memory repository has commits the remote has not seen"
    if state.remote != shown_url(settings.sync.remote) or state.at is None:
        return "never synced with this remote"
    last = datetime.fromisoformat(state.at)
    if clock.now() - last >= timedelta(minutes=settings.sync.interval_minutes):
        return "the sync interval has passed"
    return None
