"""The ``llm_calls`` ledger: one row per model call, with its tokens and estimated cost."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select

from pipeline.store.engine import Store
from pipeline.store.schema import llm_calls


@dataclass(frozen=True)
class CallRecord:
    at: datetime
    phase: str
    model: str
    outcome: str
    job_key: str | None = None
    batch: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    prompt_hash: str | None = None


async def record(store: Store, call: CallRecord) -> None:
    async with store.write() as conn:
        await conn.execute(
            insert(llm_calls).values(
                at=call.at,
                phase=call.phase,
                model=call.model,
                job_key=call.job_key,
                batch=call.batch,
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                cache_read_tokens=call.cache_read_tokens,
                cache_write_tokens=call.cache_write_tokens,
                cost_usd=call.cost_usd,
                outcome=call.outcome,
                prompt_hash=call.prompt_hash,
            )
        )


async def calls_for(store: Store, job_key: str) -> list[CallRecord]:
    """Every call made for one job, oldest first (for tests and `memd status --job`)."""
    stmt = select(llm_calls).where(llm_calls.c.job_key == job_key).order_by(llm_calls.c.id)
    async with store.read() as conn:
        rows = (await conn.execute(stmt)).all()
    return [
        CallRecord(
            at=r.at,
            phase=r.phase,
            model=r.model,
            outcome=r.outcome,
            job_key=r.job_key,
            batch=bool(r.batch),
            input_tokens=r.input_tokens,
            output_tokens=r.output_tokens,
            cache_read_tokens=r.cache_read_tokens,
            cache_write_tokens=r.cache_write_tokens,
            cost_usd=r.cost_usd,
            prompt_hash=r.prompt_hash,
        )
        for r in rows
    ]
