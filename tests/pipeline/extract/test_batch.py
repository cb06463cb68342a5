"""Phase 1 through Message Batches: stored before waiting, resumed after a restart, entries settled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.clock import FakeClock
from pipeline.extract.batch import BATCH_LEASE
from pipeline.extract.run import run_phase1
from pipeline.store import Store, stage1
from pipeline.store import llm_calls as calls
from pipeline.vocabulary import BatchState
from tests.conftest import sqlite_only
from tests.fakes import anthropic_api as fa
from tests.pipeline.extract.support import (
    FakeLoader,
    TagRedactor,
    add_transcript,
    conversation,
    extract_output,
    job_row,
    make_settings,
    transcript_state,
)

SECRET = "SECRET-batchsecret1"


def creates(api: fa.FakeAnthropicAPI) -> list[fa.RecordedRequest]:
    return [r for r in api.requests if r.method == "POST" and r.path == "/v1/messages/batches"]


async def setup(
    tmp_path: Path, store: Store, clock: FakeClock, api: fa.FakeAnthropicAPI, n: int, **llm: Any
) -> tuple[Any, FakeLoader, list[int]]:
    settings = make_settings(tmp_path, api.base_url, llm={"batch": "on", **llm})
    loader = FakeLoader()
    tids = []
    for i in range(n):
        path = f"/t/b{i}.jsonl"
        loader.files[path] = conversation(2, secret=SECRET)
        tids.append(await add_transcript(store, now=clock.now(), path=path, session_id=f"b-{i}"))
    return settings, loader, tids


async def test_batch_is_stored_resumed_after_restart_and_settled(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    fake_api.auto_end_batches = False
    settings, loader, (ok, gone, bad) = await setup(tmp_path, store, clock, fake_api, 3)

    first = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )

    [batch_id] = first.batches_submitted
    [create] = creates(fake_api)
    assert fake_api.message_requests() == []
    sent = create.json["requests"]
    assert [r["custom_id"] for r in sent] == [
        f"x{i}-{t}" for i, t in zip((1, 2, 3), (ok, gone, bad), strict=True)
    ]
    for entry in sent:
        assert SECRET not in str(entry["params"])
        assert entry["params"]["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert entry["params"]["output_config"]["format"]["type"] == "json_schema"
    [row] = await stage1.open_batches(store, phase="extract")
    assert row.batch_id == batch_id
    assert set(row.entries) == {r["custom_id"] for r in sent}
    for tid in (ok, gone, bad):
        job = await job_row(store, str(tid))
        assert job.state == "running"
        assert job.lease_until == clock.now() + BATCH_LEASE
        assert job.owner.startswith("batch-")  # not the run's: a cancelled run's release leaves it alone

    # A restart: a new client, a new run. It polls the stored batch instead of submitting again.
    second = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )
    assert second.batches_pending == 1
    assert second.batches_submitted == []
    assert len(creates(fake_api)) == 1
    assert any(r.method == "GET" and r.path == f"/v1/messages/batches/{batch_id}" for r in fake_api.requests)

    # The batch ends: one success, one expired, one rejected; results come back in another order.
    fake_api.responder = lambda body, headers: fa.json_message(
        extract_output(raw_memory=f"- token {SECRET}"), usage_=fa.usage(2000, 300)
    )
    [cid_ok, cid_gone, cid_bad] = [r["custom_id"] for r in sent]
    batch = fake_api.end_batch(
        batch_id, {cid_gone: fa.expired(), cid_bad: fa.errored("prompt is too long", "invalid_request_error")}
    )
    batch.results.reverse()
    fake_api.auto_end_batches = False
    third = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )

    assert third.batches_collected == 1
    assert await stage1.open_batches(store, phase="extract") != []  # the expired entry went into a new batch
    [out] = await stage1.outputs_for(store, ok)
    assert out.raw_memory == "- token [REDACTED:test-secret]"
    # the evidence is checked after a restart too, from what the entry kept (no transcript text)
    assert [(m["evidence_claimed"], m["evidence"]) for m in out.memories] == [("user", "user")]
    assert "user turn" not in str(row.entries)
    assert out.usage["batch"] is True
    assert (await transcript_state(store, ok))[0] == "extracted"
    [call] = await calls.calls_for(store, str(ok))
    assert call.batch is True
    assert call.cost_usd == pytest.approx(out.usage["cost_usd"])
    state, reason, _ = await transcript_state(store, bad)
    assert state == "failed"
    assert reason == "API rejected the batch entry (invalid_request_error): prompt is too long"
    # The expired entry went back to the queue and, this run, into a second batch.
    [_, again] = creates(fake_api)
    assert [r["custom_id"] for r in again.json["requests"]] == [f"x2-{gone}"]
    assert (await job_row(store, str(gone))).state == "running"


async def test_invalid_batch_output_goes_back_once_then_fails(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    settings, loader, [tid] = await setup(tmp_path, store, clock, fake_api, 1)
    fake_api.responder = lambda body, headers: fa.malformed()
    llm = llm_factory(settings, store, clock)

    await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)  # submitted, ended at once
    report = await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)  # collected: invalid

    assert report.batches_collected == 1
    assert len(creates(fake_api)) == 2  # requeued once, resubmitted in the same run
    collect = await run_phase1(store, settings, clock, llm, TagRedactor(), load=loader)
    assert collect.failed == 1
    state, reason, _ = await transcript_state(store, tid)
    assert state == "failed"
    assert reason is not None
    assert reason.startswith("model output invalid after 2 tries")


@pytest.mark.parametrize(("pending", "batched"), [(3, False), (4, True)])
@sqlite_only
async def test_auto_batches_when_enough_are_pending(
    pending: int,
    batched: bool,
    tmp_path: Path,
    store: Store,
    clock: FakeClock,
    fake_api: fa.FakeAnthropicAPI,
    llm_factory: Any,
) -> None:
    settings, loader, _ = await setup(
        tmp_path, store, clock, fake_api, pending, batch="auto", batch_min_pending=4
    )
    fake_api.responder = lambda body, headers: fa.json_message(extract_output())
    report = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )
    assert report.batch is batched
    assert len(creates(fake_api)) == int(batched)
    assert len(fake_api.message_requests()) == (0 if batched else pending)


async def test_a_refused_batch_puts_every_item_back(
    tmp_path: Path, store: Store, clock: FakeClock, fake_api: fa.FakeAnthropicAPI, llm_factory: Any
) -> None:
    settings, loader, tids = await setup(tmp_path, store, clock, fake_api, 2)
    fake_api.interceptor = lambda rec: fa.rate_limited(90) if rec.path == "/v1/messages/batches" else None
    report = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )
    assert report.batches_submitted == []
    assert await stage1.open_batches(store, phase="extract") == []
    for tid in tids:
        job = await job_row(store, str(tid))
        assert job.state == "pending"
        assert 90 <= (job.not_before - clock.now()).total_seconds() <= 108


class Stop(BaseException):
    """memd stopping dead at a chosen point (as kill -9 would)."""


async def _stop(*_args: object, **_kwargs: object) -> None:
    raise Stop


async def test_a_stop_after_the_batch_was_created_adopts_it_and_pays_once(
    tmp_path: Path,
    store: Store,
    clock: FakeClock,
    fake_api: fa.FakeAnthropicAPI,
    llm_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_api.auto_end_batches = False
    settings, loader, tids = await setup(tmp_path, store, clock, fake_api, 2)
    monkeypatch.setattr(stage1, "adopt_batch", _stop)  # created, but its id never recorded
    with pytest.raises(Stop):
        await run_phase1(
            store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
        )
    monkeypatch.undo()
    [batch_id] = list(fake_api.batches)
    [row] = await stage1.open_batches(store, phase="extract")
    assert row.state == BatchState.SUBMITTING
    for tid in tids:  # nobody else may take them meanwhile
        assert (await job_row(store, str(tid))).lease_until == clock.now() + BATCH_LEASE

    # Restarted: the batch is found and adopted, not sent again.
    second = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )
    assert second.batches_submitted == []
    assert second.batches_pending == 1
    [row] = await stage1.open_batches(store, phase="extract")
    assert (row.batch_id, row.state) == (batch_id, BatchState.SUBMITTED)
    fake_api.responder = lambda body, headers: fa.json_message(extract_output())
    fake_api.end_batch(batch_id)
    third = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )
    assert third.batches_collected == 1
    assert [(await transcript_state(store, tid))[0] for tid in tids] == ["extracted", "extracted"]
    assert len(creates(fake_api)) == 1
    assert fake_api.message_requests() == []


async def test_a_stop_before_the_batch_was_created_queues_its_entries_again(
    tmp_path: Path,
    store: Store,
    clock: FakeClock,
    fake_api: fa.FakeAnthropicAPI,
    llm_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipeline.llm.client import LLMClient

    settings, loader, tids = await setup(tmp_path, store, clock, fake_api, 2)
    monkeypatch.setattr(LLMClient, "submit_batch", _stop)
    with pytest.raises(Stop):
        await run_phase1(
            store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
        )
    monkeypatch.undo()
    assert creates(fake_api) == []

    # Restarted: no batch of that size exists, so its entries go back and into a batch of this run.
    fake_api.responder = lambda body, headers: fa.json_message(extract_output())
    second = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )
    assert len(second.batches_submitted) == 1
    assert len(creates(fake_api)) == 1
    third = await run_phase1(
        store, settings, clock, llm_factory(settings, store, clock), TagRedactor(), load=loader
    )
    assert third.batches_collected == 1
    assert [(await transcript_state(store, tid))[0] for tid in tids] == ["extracted", "extracted"]
    assert [r.state for r in await stage1.open_batches(store, phase="extract")] == []
