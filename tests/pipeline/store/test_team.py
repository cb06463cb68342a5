"""Team mode in the store: what one machine sharing it submitted is that machine's to collect."""

from __future__ import annotations

from pipeline.clock import FakeClock
from pipeline.store import Store, stage1
from tests.conftest import as_machine


async def test_a_message_batch_is_collected_only_by_the_machine_that_submitted_it(
    store: Store, clock: FakeClock
) -> None:
    async with as_machine(store, "m1") as one, as_machine(store, "m2") as two:
        await stage1.record_batch(one, "msgbatch_m1", phase="phase1", entries={"c1": {}}, now=clock.now())
        assert [b.batch_id for b in await stage1.open_batches(one, phase="phase1")] == ["msgbatch_m1"]
        assert await stage1.open_batches(two, phase="phase1") == []
        # ... though the batch id is known to every machine (the API lists one key's batches to all).
        assert await stage1.known_batch_ids(two) == {"msgbatch_m1"}
