"""The model client: built from settings, its own backoff, rate-limit recording, usage and cost per call.

``build_client(settings, store=..., clock=..., env=os.environ)`` gives an ``LLMClient``; without the
key it raises ``NoAPIKey`` naming the variable (work that needs no model, such as scanning, goes on).
The SDK's own retries are off (``max_retries=0``: it would honour any ``retry-after`` uncapped);
failures come back as memd's errors (``pipeline.llm.backoff``) and the caller reschedules the item.
A client middleware records the ``anthropic-ratelimit-*`` headers of every response, errors
included, for the gate (``pipeline.llm.ratelimit``). ``LLMClient`` satisfies
``pipeline.llm.protocol.ModelClient``, the type its callers know it by; ``LLMClient.sdk`` (the
``AsyncAnthropic``) stays inside this package: phase 2's agent is made by ``memory_agent``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import structlog

from pipeline.clock import Clock
from pipeline.errors import LLMError, LLMUnavailable, LLMUnreachable, NoAPIKey
from pipeline.llm import ratelimit
from pipeline.llm.backoff import translate
from pipeline.llm.pricing import Usage, cost_usd, usage_of
from pipeline.llm.protocol import BatchEntry, BatchInfo, ConsolidationAgent, ModelClient, Reply, TurnHook
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store import llm_calls as calls

if TYPE_CHECKING:
    from pipeline.llm.agent import MemoryAgent

__all__ = ["BatchEntry", "BatchInfo", "LLMClient", "Reply", "build_client", "reply_of"]

log = structlog.get_logger(__name__)

SDK_MAX_RETRIES = 0
# At DEBUG the SDK logs whole request bodies (transcript text): never let it.
for _name in ("anthropic", "httpx2", "httpcore2", "httpx", "httpcore"):
    logging.getLogger(_name).setLevel(logging.WARNING)


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
        self, sdk: Any, settings: Settings, *, store: Store, clock: Clock, rng: random.Random | None = None
    ) -> None:
        self.sdk = sdk
        self.settings = settings
        self.store = store
        self.clock = clock
        self.rng = rng or random.Random()

    @property
    def supports_batches(self) -> bool:
        return self.settings.llm.provider == "anthropic"

    async def aclose(self) -> None:
        await self.sdk.close()

    async def _fail(
        self, exc: anthropic.APIError, *, attempt: int, phase: str, model: str, job_key: str | None
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
                cost_usd=cost_usd(model, usage, batch=batch),
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
        """One Messages call. Raises ``LLMUnavailable`` / ``LLMRejected`` / ``LLMAuthFailed``."""
        model = str(params["model"])
        try:
            message = await self.sdk.messages.create(**params, timeout=self.settings.llm.request_timeout_s)
        except anthropic.APIError as exc:
            raise await self._fail(exc, attempt=attempt, phase=phase, model=model, job_key=job_key) from None
        reply = reply_of(message)
        await self.record_usage(
            reply.usage, model=model, phase=phase, job_key=job_key, prompt_hash=prompt_hash
        )
        return reply

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
    ) -> MemoryAgent:
        """The consolidation agent (``pipeline.llm.agent``) on this client's SDK, with the memory tool
        confined to ``root``; its usage and failures go to the ledger (a 429/529 also closes the gate)."""
        from pipeline.llm.agent import MemoryAgent
        from pipeline.llm.memory_tool import ConfinedMemoryTool

        async def on_usage(usage: Usage, used_model: str) -> None:
            await self.record_usage(
                usage, model=used_model, phase=phase, job_key=job_key, prompt_hash=prompt_hash
            )

        async def on_error(err: LLMError) -> None:
            await self.record_failure(err, phase=phase, model=model, job_key=job_key)

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


def build_client(
    settings: Settings,
    *,
    store: Store,
    clock: Clock,
    env: Mapping[str, str],
    http_client: Any = None,
    rng: random.Random | None = None,
) -> LLMClient:
    """The client for ``settings.llm``. Raises ``NoAPIKey`` when the key variable is unset (provider anthropic)."""
    llm = settings.llm
    recorder = RateLimitRecorder(store, clock)
    common: dict[str, Any] = {
        "max_retries": SDK_MAX_RETRIES,
        "timeout": llm.request_timeout_s,
        "middleware": [recorder],
    }
    if http_client is not None:
        common["http_client"] = http_client
    if llm.provider == "anthropic":
        key = env.get(llm.api_key_env)
        if not key:
            raise NoAPIKey(llm.api_key_env)
        base_url = llm.base_url or env.get("ANTHROPIC_BASE_URL") or None
        sdk: Any = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, open_telemetry=False, **common)
    elif llm.provider == "bedrock":
        try:
            region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
            sdk = anthropic.AsyncAnthropicBedrock(aws_region=region, base_url=llm.base_url, **common)
        except ImportError as exc:
            raise LLMError(
                f"provider bedrock needs the extra: pip install 'memd-daemon[bedrock]' ({exc})"
            ) from None
        except (ValueError, anthropic.AnthropicError) as exc:
            raise LLMError(f"cannot set up provider bedrock: {exc}") from None
    else:
        try:
            vertex: dict[str, Any] = {
                k: v
                for k, v in (
                    ("region", env.get("CLOUD_ML_REGION")),
                    ("project_id", env.get("ANTHROPIC_VERTEX_PROJECT_ID")),
                )
                if v
            }
            sdk = anthropic.AsyncAnthropicVertex(base_url=llm.base_url, **vertex, **common)
        except ImportError as exc:
            raise LLMError(
                f"provider vertex needs the extra: pip install 'memd-daemon[vertex]' ({exc})"
            ) from None
        except (ValueError, anthropic.AnthropicError) as exc:
            raise LLMError(f"cannot set up provider vertex: {exc}") from None
    return LLMClient(sdk, settings, store=store, clock=clock, rng=rng)


if TYPE_CHECKING:  # mypy checks here that the real client and agent satisfy the protocols

    def _satisfies(client: LLMClient, agent: MemoryAgent) -> tuple[ModelClient, ConsolidationAgent]:
        return client, agent
