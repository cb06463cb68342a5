"""The consolidation agent's loop: the SDK's tool runner with the confined memory tool and nothing else.

Phase 2 gets one from ``LLMClient.memory_agent`` and knows it as a
``pipeline.llm.protocol.ConsolidationAgent``.

``MemoryAgent.run(text)`` adds ``text`` as a user message and lets the model work through the
tool runner (``thread=False``: every request is self-contained, nothing is kept server-side)
until it stops, the turn limit is reached or the token budget is spent. ``run`` can be called
again with findings to repair: the conversation, kept here, goes on where it stopped.

Errors from the API come back as memd's (``LLMUnavailable`` / ``LLMRejected`` ...), jittered with
``rng``, after ``on_error`` saw them (the ledger, and the gate for a 429/529); every turn's usage
goes to ``on_usage`` (the ``llm_calls`` ledger) as it happens, so spend is recorded even when the
run later fails.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic
import structlog

from pipeline.clock import Clock
from pipeline.errors import LLMError
from pipeline.llm.backoff import translate
from pipeline.llm.memory_tool import ConfinedMemoryTool
from pipeline.llm.pricing import Usage, usage_of
from pipeline.llm.protocol import AgentOutcome, TurnHook

__all__ = ["AgentOutcome", "MemoryAgent"]

log = structlog.get_logger(__name__)

MAX_OUTPUT_TOKENS = 12_000

UsageHook = Callable[[Usage, str], Awaitable[None]]
ErrorHook = Callable[[LLMError], Awaitable[None]]


@dataclass
class MemoryAgent:
    """One consolidation conversation."""

    sdk: Any
    model: str
    system: str
    tool: ConfinedMemoryTool
    clock: Clock
    max_turns: int
    token_budget: int
    max_backoff_s: float
    request_timeout_s: float
    on_usage: UsageHook | None = None
    on_turn: TurnHook | None = None
    on_error: ErrorHook | None = None
    rng: random.Random | None = None
    max_output_tokens: int = MAX_OUTPUT_TOKENS
    history: list[Any] = field(default_factory=list)
    """The conversation so far (message params; assistant turns as the SDK's own blocks)."""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0

    @property
    def turns_left(self) -> int:
        return max(0, self.max_turns - self.turns)

    def _add_user_text(self, text: str) -> None:
        block: dict[str, Any] = {"type": "text", "text": text}
        if self.history and self.history[-1]["role"] == "user":
            # The last turn was cut off after its tool results: one user message holds both.
            last = self.history[-1]
            content = last["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
            self.history[-1] = {"role": "user", "content": [*blocks, block]}
        else:
            self.history.append({"role": "user", "content": [block]})

    async def run(self, text: str, *, turns: int | None = None) -> AgentOutcome:
        """Send ``text`` and run the tool loop for at most ``turns`` (default: what is left)."""
        self._add_user_text(text)
        limit = min(self.turns_left, turns if turns is not None else self.turns_left)
        if limit <= 0:
            return AgentOutcome("turn_limit", self.turns, "")
        runner = self.sdk.beta.messages.tool_runner(
            model=self.model,
            max_tokens=self.max_output_tokens,
            system=self.system,
            messages=list(self.history),
            tools=[self.tool],
            thread=False,
            max_iterations=limit,
            cache_control={"type": "ephemeral"},
            timeout=self.request_timeout_s,
        )
        stop_reason: str | None = None
        final_text = ""
        used = 0
        try:
            async for message in runner:
                used += 1
                self.turns += 1
                turn_usage = usage_of(message)
                self.usage = self.usage + turn_usage
                if self.on_usage is not None:
                    await self.on_usage(turn_usage, str(getattr(message, "model", self.model)))
                self.history.append(message.to_param())
                stop_reason = message.stop_reason
                final_text = "".join(b.text for b in message.content if getattr(b, "type", None) == "text")
                if stop_reason == "tool_use":
                    response = await runner.generate_tool_call_response()
                    if response is not None:
                        self.history.append(response)
                if self.on_turn is not None:
                    await self.on_turn(self.turns)
                if self.usage.total_tokens > self.token_budget:
                    log.warning("agent_token_budget_spent", turns=self.turns, tokens=self.usage.total_tokens)
                    return AgentOutcome("token_budget", self.turns, final_text)
        except anthropic.APIError as exc:
            err = translate(
                exc, now=self.clock.now(), max_backoff_s=self.max_backoff_s, rng=self.rng, model=self.model
            )
            if self.on_error is not None:
                await self.on_error(err)
            raise err from None
        finally:
            await runner.close()
        if stop_reason in ("tool_use", "pause_turn") and used >= limit:
            return AgentOutcome("turn_limit", self.turns, final_text)
        return AgentOutcome("done", self.turns, final_text)
