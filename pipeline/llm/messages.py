"""The model client on the Messages API: its own backoff, rate-limit recording, usage and cost per call.

``LLMClient`` (made by ``pipeline.llm.client.build_client``) holds the ``anthropic`` SDK client; the
SDK's own retries are off (``max_retries=0``: it would honour any ``retry-after`` uncapped);
failures come back as memd's errors (``pipeline.llm.backoff``) and the caller reschedules the item.
A client middleware records the ``anthropic-ratelimit-*`` headers of every response, errors
included, for the gate (``pipeline.llm.ratelimit``). An endpoint that is not Anthropic's and refuses
Message Batches (404), the built-in memory tool type or ``output_config`` (400 naming it) is
learned (``pipeline.llm.endpoint``) and served the other way: direct calls, the ``memory`` function
tool (``pipeline.llm.function_agent``), a forced tool call. ``OpenAIClient``
(``pipeline.llm.openai_client``) is the same client over Chat Completions.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import structlog

from pipeline.clock import Clock
from pipeline.errors import (
    LLMError,
    LLMFeatureRefused,
    LLMRejected,
    LLMUnavailable,
    LLMUnreachable,
)
from pipeline.llm import endpoint as endpoints
from pipeline.llm import ratelimit
from pipeline.llm.backoff import translate
from pipeline.llm.endpoint import Endpoint, endpoint_for, price_for
from pipeline.llm.pricing import Usage, cost_usd, usage_of
from pipeline.llm.protocol import (
    AgentOutcome,
    BatchEntry,
    BatchInfo,
    ConsolidationAgent,
    ModelClient,
    Reply,
    TurnHook,
)
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store import llm_calls as calls

if TYPE_CHECKING:
    from pipeline.llm.agent import MemoryAgent
    from pipeline.llm.function_agent import FunctionMemoryAgent, Turn

__all__ = ["SDK_MAX_RETRIES", "LLMClient", "RateLimitRecorder", "reply_of"]

log = structlog.get_logger(__name__)

SDK_MAX_RETRIES = 0
SDK_LOGGERS = ("anthropic", "openai", "httpx2", "httpcore2", "httpx", "httpcore")


def quiet_sdk_loggers() -> None:
    """At DEBUG the SDKs log whole request bodies (transcript text): never let them."""
    for name in SDK_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


quiet_sdk_loggers()


def _batch_info(batch: Any) -> BatchInfo:
    return BatchInfo(
        str(batch.id),
        str(batch.processing_status),
        batch.request_counts.model_dump(),
        getattr(batch, "created_at", None),
    )


def reply_of(message: Any) -> Reply:
    text = "".join(b.text for b in message.content if getattr(b, "type", None) == "text")
    return Reply(text, usage_of(message), str(message.model), message.stop_reason, message)


EMIT_TOOL = "emit_extract"
"""The forced tool that carries phase 1's answer where structured output is refused."""
OUTPUT_CONFIG_WORDS = ("output_config", "output_format", "json_schema", "extra inputs are not permitted")
BUILTIN_TOOL_WORDS = ("memory_20250818", "tool type", "tools.0", "input_schema", "unknown tool", "tool")


def forced_tool_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with ``output_config``'s schema asked for as one forced tool call instead."""
    out = {k: v for k, v in params.items() if k != "output_config"}
    schema = params["output_config"]["format"]["schema"]
    out["tools"] = [
        {
            "name": EMIT_TOOL,
            "description": "Return the extract (the JSON object asked for).",
            "input_schema": schema,
        }
    ]
    out["tool_choice"] = {"type": "tool", "name": EMIT_TOOL}
    return out


def forced_reply_of(message: Any) -> Reply:
    """The forced call's input as the reply text (validated by the caller like any answer)."""
    for block in message.content:
        if getattr(block, "type", None) == "tool_use":
            return Reply(
                json.dumps(block.input), usage_of(message), str(message.model), message.stop_reason, message
            )
    return reply_of(message)


class RateLimitRecorder(anthropic.Middleware):
    """Records every response's ``anthropic-ratelimit-*`` headers (429s included) in the store."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.last: ratelimit.RateLimitSnapshot | None = None

    async def handle_async(self, request: Any, call_next: Any) -> Any:
        response = await call_next(request)
        snapshot = ratelimit.parse_headers(dict(response.headers.items()), self.clock.now())
        if snapshot is not None:
            self.last = snapshot
            try:
                await ratelimit.record_snapshot(self.store, snapshot)
            except Exception as exc:  # the call itself succeeded; losing one snapshot is not fatal
                log.warning("rate_limit_record_failed", error=type(exc).__name__)
        return response


class LLMClient:
    """memd's handle on the model API. Every call is recorded in ``llm_calls`` with its cost."""

    def __init__(
        self,
        sdk: Any,
        settings: Settings,
        *,
        store: Store,
        clock: Clock,
        rng: random.Random | None = None,
        endpoint: Endpoint | None = None,
    ) -> None:
        self.sdk = sdk
        self.settings = settings
        self.store = store
        self.clock = clock
        self.rng = rng or random.Random()
        self.endpoint = endpoint or endpoint_for(settings.llm, "extract")

    @property
    def supports_batches(self) -> bool:
        return self.endpoint.provider == "anthropic"

    async def can_batch(self) -> bool:
        if not self.supports_batches:
            return False
        return (await endpoints.learned(self.store, self.endpoint)).get("batches") is not False

    async def learn(self, **facts: Any) -> None:
        """Record what this endpoint refused (``pipeline.llm.endpoint``); a store hiccup loses only that."""
        try:
            await endpoints.learn(self.store, self.endpoint, now=self.clock.now(), **facts)
        except Exception as exc:
            log.warning("endpoint_learn_failed", error=type(exc).__name__)
        log.info("endpoint_learned", endpoint=self.endpoint.key, **{k: str(v) for k, v in facts.items()})

    async def aclose(self) -> None:
        await self.sdk.close()

    async def _fail(
        self, exc: Exception, *, attempt: int, phase: str, model: str, job_key: str | None
    ) -> LLMError:
        err = translate(
            exc,
            now=self.clock.now(),
            attempt=attempt,
            max_backoff_s=self.settings.llm.max_backoff_s,
            rng=self.rng,
            model=model or None,
        )
        await self.record_failure(err, phase=phase, model=model, job_key=job_key)
        return err

    async def record_failure(self, err: LLMError, *, phase: str, model: str, job_key: str | None) -> None:
        """A failed call in the ledger; a retryable one (429, 529, 5xx, timeout) also closes the gate
        until its ``not_before``, so no new call of any phase starts before then (an API that cannot be
        reached asked for no wait: the next run tries again, and fails as truthfully). Callers that reach the
        API through the SDK's own helpers (phase 2's tool runner) report their failures here too."""
        now = self.clock.now()
        outcome = type(err).__name__
        await calls.record(
            self.store, calls.CallRecord(at=now, phase=phase, model=model, outcome=outcome, job_key=job_key)
        )
        if isinstance(err, LLMUnavailable) and not isinstance(err, LLMUnreachable) and err.not_before:
            await ratelimit.record_backoff(self.store, err.not_before, str(err), now=now)
        log.warning(
            "llm_call_failed",
            phase=phase,
            job_key=job_key,
            error=outcome,
            status=getattr(err, "status", None),
        )

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
        await calls.record(
            self.store,
            calls.CallRecord(
                at=self.clock.now(),
                phase=phase,
                model=model,
                outcome=outcome,
                job_key=job_key,
                batch=batch,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost_usd=cost_usd(
                    model, usage, batch=batch, price=price_for(self.settings.llm, self.endpoint, model)
                ),
                prompt_hash=prompt_hash,
            ),
        )

    async def create(
        self,
        params: Mapping[str, Any],
        *,
        phase: str,
        job_key: str | None = None,
        prompt_hash: str | None = None,
        attempt: int = 1,
    ) -> Reply:
        """One Messages call. Raises ``LLMUnavailable`` / ``LLMRejected`` / ``LLMAuthFailed``.
        Where an endpoint other than Anthropic's refuses ``output_config``, the schema is asked for
        as one forced tool call (learned: later calls go that way at once)."""
        model = str(params["model"])
        forced = False
        if "output_config" in params and not self.endpoint.anthropic_hosted:
            forced = (await endpoints.learned(self.store, self.endpoint)).get("output_config") is False
        try:
            message = await self._messages(forced_tool_params(params) if forced else params)
        except anthropic.APIError as exc:
            err = await self._fail(exc, attempt=attempt, phase=phase, model=model, job_key=job_key)
            if not (
                "output_config" in params
                and not forced
                and not self.endpoint.anthropic_hosted
                and isinstance(err, LLMRejected)
                and endpoints.refusal(err.status, str(err), OUTPUT_CONFIG_WORDS, any_400=False)
            ):
                raise err from None
            await self.learn(output_config=False)
            forced = True
            try:
                message = await self._messages(forced_tool_params(params))
            except anthropic.APIError as exc2:
                raise await self._fail(
                    exc2, attempt=attempt, phase=phase, model=model, job_key=job_key
                ) from None
        reply = forced_reply_of(message) if forced else reply_of(message)
        await self.record_usage(
            reply.usage, model=model, phase=phase, job_key=job_key, prompt_hash=prompt_hash
        )
        return reply

    async def _messages(self, params: Mapping[str, Any]) -> Any:
        return await self.sdk.messages.create(**params, timeout=self.settings.llm.request_timeout_s)

    async def count_tokens(self, params: Mapping[str, Any]) -> int:
        """The API's own count of a request's input tokens (not on Bedrock); optional, costs a request."""
        allowed = {"model", "messages", "system", "tools", "tool_choice", "output_config", "cache_control"}
        try:
            result = await self.sdk.messages.count_tokens(**{k: v for k, v in params.items() if k in allowed})
        except anthropic.APIError as exc:
            raise await self._fail(
                exc, attempt=1, phase="count", model=str(params["model"]), job_key=None
            ) from None
        return int(result.input_tokens)

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
        """The consolidation agent (``pipeline.llm.agent``) on this client's SDK, with the memory tool
        confined to ``root``; its usage and failures go to the ledger (a 429/529 also closes the gate).
        An endpoint other than Anthropic's that refuses the built-in memory tool type gets the same
        tool as an ordinary function tool (``pipeline.llm.function_agent``), learned for next time."""
        from pipeline.llm.function_agent import FunctionMemoryAgent
        from pipeline.llm.memory_tool import ConfinedMemoryTool

        async def on_usage(usage: Usage, used_model: str) -> None:
            await self.record_usage(
                usage, model=used_model, phase=phase, job_key=job_key, prompt_hash=prompt_hash
            )

        async def on_error(err: LLMError) -> None:
            await self.record_failure(err, phase=phase, model=model, job_key=job_key)

        def function_agent() -> FunctionMemoryAgent:
            return FunctionMemoryAgent(
                transport=AnthropicFunctionTransport(self, model=model, phase=phase, job_key=job_key),
                system=system,
                tool=ConfinedMemoryTool(root, max_bytes_for=max_bytes_for, read_only=read_only),
                clock=self.clock,
                max_turns=max_turns,
                token_budget=token_budget,
                on_usage=on_usage,
                on_turn=on_turn,
                rng=self.rng,
            )

        if self.endpoint.anthropic_hosted:
            return self._builtin_agent(
                root,
                model,
                system,
                max_bytes_for,
                read_only,
                max_turns,
                token_budget,
                on_usage,
                on_turn,
                on_error,
            )
        return _FallbackAgent(
            client=self,
            builtin=lambda: self._builtin_agent(
                root,
                model,
                system,
                max_bytes_for,
                read_only,
                max_turns,
                token_budget,
                on_usage,
                on_turn,
                on_error,
            ),
            function=function_agent,
            max_turns=max_turns,
        )

    def _builtin_agent(
        self,
        root: Path,
        model: str,
        system: str,
        max_bytes_for: Callable[[str], int],
        read_only: Callable[[str], bool],
        max_turns: int,
        token_budget: int,
        on_usage: Any,
        on_turn: TurnHook | None,
        on_error: Any,
    ) -> MemoryAgent:
        from pipeline.llm.agent import MemoryAgent
        from pipeline.llm.memory_tool import ConfinedMemoryTool

        return MemoryAgent(
            sdk=self.sdk,
            model=model,
            system=system,
            tool=ConfinedMemoryTool(root, max_bytes_for=max_bytes_for, read_only=read_only),
            clock=self.clock,
            max_turns=max_turns,
            token_budget=token_budget,
            max_backoff_s=self.settings.llm.max_backoff_s,
            request_timeout_s=self.settings.llm.request_timeout_s,
            on_usage=on_usage,
            on_turn=on_turn,
            on_error=on_error,
            rng=self.rng,
        )

    # -- Message Batches

    async def submit_batch(self, requests: Sequence[tuple[str, Mapping[str, Any]]], *, phase: str) -> str:
        """Submit ``(custom_id, params)`` pairs as one Message Batch; returns its id."""
        body = [{"custom_id": cid, "params": dict(params)} for cid, params in requests]
        model = str(requests[0][1]["model"]) if requests else ""
        try:
            batch = await self.sdk.messages.batches.create(requests=body)
        except anthropic.APIError as exc:
            if getattr(exc, "status_code", None) == 404 and not self.endpoint.anthropic_hosted:
                await self.learn(batches=False)
                err = LLMFeatureRefused(f"{self.endpoint.base_url} has no Message Batches (404)", status=404)
                await self.record_failure(err, phase=phase, model=model, job_key=None)
                raise err from None
            raise await self._fail(exc, attempt=1, phase=phase, model=model, job_key=None) from None
        return str(batch.id)

    async def batch_info(self, batch_id: str, *, phase: str) -> BatchInfo:
        try:
            batch = await self.sdk.messages.batches.retrieve(batch_id)
        except anthropic.APIError as exc:
            raise await self._fail(exc, attempt=1, phase=phase, model="", job_key=None) from None
        return _batch_info(batch)

    async def recent_batches(self, *, phase: str, limit: int = 50) -> list[BatchInfo]:
        """The account's most recent Message Batches, newest first (to find one memd created but
        did not get to record)."""
        try:
            page = await self.sdk.messages.batches.list(limit=limit)
        except anthropic.APIError as exc:
            raise await self._fail(exc, attempt=1, phase=phase, model="", job_key=None) from None
        return [_batch_info(b) for b in page.data]

    async def batch_results(self, batch_id: str, *, phase: str) -> list[BatchEntry]:
        """Every entry of an ended batch (unordered: match them by ``custom_id``)."""
        entries: list[BatchEntry] = []
        try:
            async for item in await self.sdk.messages.batches.results(batch_id):
                result = item.result
                if result.type == "succeeded":
                    entries.append(BatchEntry(item.custom_id, "succeeded", reply=reply_of(result.message)))
                elif result.type == "errored":
                    err = getattr(result.error, "error", None)
                    entries.append(
                        BatchEntry(
                            item.custom_id,
                            "errored",
                            error=str(getattr(err, "message", "") or "errored"),
                            error_type=str(getattr(err, "type", "") or "api_error"),
                        )
                    )
                else:
                    entries.append(BatchEntry(item.custom_id, str(result.type)))
        except anthropic.APIError as exc:
            raise await self._fail(exc, attempt=1, phase=phase, model="", job_key=None) from None
        return entries


class _FallbackAgent:
    """Phase 2 on an Anthropic-compatible endpoint that is not Anthropic's: the built-in memory tool
    first, unless the endpoint refused it before; a first request refused for its tool type (400
    naming it) is learned and the run goes on with the ordinary ``memory`` function tool."""

    def __init__(
        self,
        *,
        client: LLMClient,
        builtin: Callable[[], MemoryAgent],
        function: Callable[[], FunctionMemoryAgent],
        max_turns: int,
    ) -> None:
        self.client = client
        self.builtin = builtin
        self.function = function
        self._max_turns = max_turns
        self.current: ConsolidationAgent | None = None

    @property
    def max_turns(self) -> int:
        return self._max_turns

    @property
    def turns(self) -> int:
        return 0 if self.current is None else self.current.turns

    @property
    def usage(self) -> Usage:
        return Usage() if self.current is None else self.current.usage

    async def run(self, text: str, *, turns: int | None = None) -> AgentOutcome:
        if self.current is not None:
            return await self.current.run(text, turns=turns)
        facts = await endpoints.learned(self.client.store, self.client.endpoint)
        if facts.get("builtin_tools") is False:
            self.current = self.function()
            return await self.current.run(text, turns=turns)
        first = self.builtin()
        self.current = first
        try:
            return await first.run(text, turns=turns)
        except LLMRejected as exc:
            if first.turns or not endpoints.refusal(None, str(exc), BUILTIN_TOOL_WORDS, any_400=False):
                raise
            await self.client.learn(builtin_tools=False)
            self.current = self.function()
            return await self.current.run(text, turns=turns)


class AnthropicFunctionTransport:
    """Turns of ``pipeline.llm.function_agent`` over the Messages API with an ordinary ``memory`` tool."""

    def __init__(self, client: LLMClient, *, model: str, phase: str, job_key: str | None) -> None:
        self.client = client
        self.model = model
        self.phase = phase
        self.job_key = job_key

    async def turn(self, system: str, history: list[dict[str, Any]], max_tokens: int) -> Turn:
        from pipeline.llm.function_agent import (
            MEMORY_DESCRIPTION,
            MEMORY_PARAMETERS,
            TOOL_NAME,
            ToolCall,
            Turn,
        )

        try:
            message = await self.client.sdk.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=system,
                messages=list(history),
                tools=[
                    {"name": TOOL_NAME, "description": MEMORY_DESCRIPTION, "input_schema": MEMORY_PARAMETERS}
                ],
                timeout=self.client.settings.llm.request_timeout_s,
            )
        except anthropic.APIError as exc:
            raise await self.client._fail(
                exc, attempt=1, phase=self.phase, model=self.model, job_key=self.job_key
            ) from None
        calls = [
            ToolCall(str(b.id), b.input)
            for b in message.content
            if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == TOOL_NAME
        ]
        text = "".join(b.text for b in message.content if getattr(b, "type", None) == "text")
        return Turn(text, calls, usage_of(message), str(message.model), message.to_param())

    def results(self, results: list[tuple[str, str, bool]]) -> list[dict[str, Any]]:
        blocks = [
            {"type": "tool_result", "tool_use_id": cid, "content": text, "is_error": bad}
            for cid, text, bad in results
        ]
        return [{"role": "user", "content": blocks}]

    def add_user_text(self, history: list[dict[str, Any]], text: str) -> None:
        block = {"type": "text", "text": text}
        if history and history[-1]["role"] == "user":
            content = history[-1]["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
            history[-1] = {"role": "user", "content": [*blocks, block]}
        else:
            history.append({"role": "user", "content": [block]})


if TYPE_CHECKING:  # mypy checks here that the real client and agent satisfy the protocols

    def _satisfies(client: LLMClient, agent: MemoryAgent) -> tuple[ModelClient, ConsolidationAgent]:
        return client, agent
