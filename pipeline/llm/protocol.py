"""What memd's phases ask of the model client, typed without importing the SDK.

``ModelClient`` is exactly what the callers use: phase 1's structured call and Message Batches,
the usage ledger, phase 2's consolidation agent, and closing. ``pipeline.llm.client.LLMClient``
satisfies it (mypy checks the assignment at the end of that module); phases and the daemon are
typed against this module only, so importing it costs nothing and a caller cannot reach the SDK.
The answers (``Reply``, ``BatchInfo``, ``BatchEntry``, ``AgentOutcome``) are plain data defined here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pipeline.llm.pricing import Usage

StopKind = Literal["done", "turn_limit", "token_budget", "malformed", "loop"]
"""``malformed`` / ``loop``: a function-tool agent (``pipeline.llm.function_agent``) stopped a model that
kept sending unusable calls or the same call; ``final_text`` then says why."""
TurnHook = Callable[[int], Awaitable[None]]
"""Called after each turn of the consolidation agent with the number of turns so far (may raise)."""


@dataclass(frozen=True)
class Reply:
    """One model answer: its text blocks joined, usage, and the SDK message for richer callers."""

    text: str
    usage: Usage
    model: str
    stop_reason: str | None
    message: Any


@dataclass(frozen=True)
class BatchInfo:
    batch_id: str
    status: str  # in_progress | canceling | ended
    counts: dict[str, int]
    created_at: datetime | None = None

    @property
    def size(self) -> int:
        """How many requests the batch holds, whatever became of them."""
        return sum(self.counts.values())

    @property
    def ended(self) -> bool:
        return self.status == "ended"


@dataclass(frozen=True)
class BatchEntry:
    custom_id: str
    kind: str  # succeeded | errored | expired | canceled
    reply: Reply | None = None
    error: str | None = None
    error_type: str | None = None


@dataclass
class AgentOutcome:
    stopped: StopKind
    turns: int
    final_text: str


class ConsolidationAgent(Protocol):
    """One consolidation conversation: ``run`` may be called again (a repair turn) and goes on
    where the conversation stopped."""

    @property
    def max_turns(self) -> int: ...

    @property
    def turns(self) -> int: ...

    @property
    def usage(self) -> Usage: ...

    async def run(self, text: str, *, turns: int | None = None) -> AgentOutcome: ...


class ModelClient(Protocol):
    """memd's handle on the model API, as the phases and the daemon use it."""

    @property
    def supports_batches(self) -> bool: ...

    async def can_batch(self) -> bool:
        """Whether phase 1 may use Message Batches here: the provider has them and the endpoint did
        not refuse them before (``pipeline.llm.endpoint``)."""
        ...

    async def create(
        self,
        params: Mapping[str, Any],
        *,
        phase: str,
        job_key: str | None = None,
        prompt_hash: str | None = None,
        attempt: int = 1,
    ) -> Reply:
        """One Messages call, recorded in the ledger. Raises ``LLMUnavailable`` / ``LLMRejected`` /
        ``LLMAuthFailed``."""
        ...

    async def record_usage(
        self,
        usage: Usage,
        *,
        model: str,
        phase: str,
        job_key: str | None,
        prompt_hash: str | None = None,
        batch: bool = False,
        outcome: str = "ok",
    ) -> None:
        """A call's usage and cost in the ledger (batch results are recorded when collected)."""
        ...

    async def submit_batch(self, requests: Sequence[tuple[str, Mapping[str, Any]]], *, phase: str) -> str:
        """Submit ``(custom_id, params)`` pairs as one Message Batch; returns its id."""
        ...

    async def batch_info(self, batch_id: str, *, phase: str) -> BatchInfo: ...

    async def recent_batches(self, *, phase: str, limit: int = 50) -> list[BatchInfo]:
        """The account's most recent Message Batches, newest first."""
        ...

    async def batch_results(self, batch_id: str, *, phase: str) -> list[BatchEntry]:
        """Every entry of an ended batch (unordered: match them by ``custom_id``)."""
        ...

    def memory_agent(
        self,
        root: Path,
        *,
        model: str,
        system: str,
        max_bytes_for: Callable[[str], int],
        read_only: Callable[[str], bool],
        max_turns: int,
        token_budget: int,
        phase: str,
        job_key: str | None,
        prompt_hash: str | None = None,
        on_turn: TurnHook | None = None,
    ) -> ConsolidationAgent:
        """A consolidation conversation whose only tool is the memory tool confined to ``root``
        (``max_bytes_for`` caps each file, ``read_only`` names the files it may not write). Every
        turn's usage and every failure go to the ledger under ``phase`` / ``job_key``, as they happen."""
        ...

    async def aclose(self) -> None: ...
