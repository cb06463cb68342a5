"""What one phase-1 run did (or, dry, would do): the report the daemon prints and records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipeline.llm.pricing import Usage, cost_usd
from pipeline.store.read.gate import GateState


@dataclass(frozen=True)
class WouldExtract:
    transcript_id: int
    source: str
    session_id: str
    project: str | None
    reextract: bool
    rendered_tokens: int
    request_tokens: int
    items_omitted: int
    estimated_cost_usd: float


@dataclass
class Phase1Report:
    started_at: datetime
    finished_at: datetime | None = None
    dry_run: bool = False
    batch: bool = False
    claimed: int = 0
    extracted: int = 0
    nothing_durable: int = 0
    unchanged: int = 0
    opted_out: int = 0
    """Queued sessions left out at the last moment: an opt-out or a rule (exclude_projects,
    disable_on_external_context...) that came after they were queued."""
    failed: int = 0
    retried: int = 0
    gate: GateState | None = None
    stopped: str | None = None
    batches_submitted: list[str] = field(default_factory=list)
    batches_pending: int = 0
    """Batches still open at the end of this run (submitted now, or not ended yet)."""
    sessions_pending: int = 0
    """The sessions inside those batches: a later run collects them."""
    batches_collected: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)
    scopes: set[str] = field(default_factory=set)
    would_extract: list[WouldExtract] = field(default_factory=list)

    @property
    def gated(self) -> bool:
        return self.gate is not None and self.gate.gated

    @property
    def failure(self) -> str | None:
        """What went wrong although the step ran to its end (``daemon.service.cycle.StepReport``): nothing."""
        return None

    @property
    def spend(self) -> tuple[int, float] | None:
        """The model tokens and dollars this run spent, for the step's log line."""
        return (self.usage.total_tokens, self.cost_usd)

    def summary(self) -> dict[str, Any]:
        """Plain JSON for ``memd status`` (kv ``phase1_last_run``)."""
        return {
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "batch": self.batch,
            "claimed": self.claimed,
            "extracted": self.extracted,
            "nothing_durable": self.nothing_durable,
            "unchanged": self.unchanged,
            "opted_out": self.opted_out,
            "failed": self.failed,
            "retried": self.retried,
            "gated": self.gated,
            "gate_reason": self.gate.reason if self.gate else None,
            "gate_reset_at": self.gate.reset_at.isoformat() if self.gate and self.gate.reset_at else None,
            "stopped": self.stopped,
            "batches_submitted": self.batches_submitted,
            "batches_pending": self.batches_pending,
            "sessions_pending": self.sessions_pending,
            "tokens": self.usage.total_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "failures": [{"job": k, "reason": r} for k, r in self.failures[:20]],
        }

    def add_usage(self, model: str, usage: Usage, *, batch: bool, cost: float | None = None) -> None:
        """``cost``: what the endpoint charges (``pipeline.llm.endpoint.phase_cost``), else the table's."""
        self.usage = self.usage + usage
        self.cost_usd += cost_usd(model, usage, batch=batch) if cost is None else cost
